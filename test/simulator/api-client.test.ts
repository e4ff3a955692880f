import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { MockAgent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiClient, ApiError } from "../../protocol/api-client.js";
import { BlockkitServer } from "../../server/controller.js";

const TOKEN = "admin-token-0123456789";

describe("ApiClient against a real server", () => {
  let server: BlockkitServer;
  let dir: string;
  let api: ApiClient;
  let base: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-api-"));
    server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: dir, adminToken: TOKEN, logger: pino({ level: "silent" }), pollHoldSeconds: 1 });
    const started = await server.start();
    base = started.baseUrl;
    api = new ApiClient({ baseUrl: base, streamUrl: started.streamUrl, token: TOKEN });
  });

  afterAll(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function blockPost(node: string, token: string, what: string, body: unknown): Promise<number> {
    const res = await request(`${base}/block/${node}/${what}`, {
      method: "POST",
      headers: { "x-service-token": token, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    await res.body.text();
    return res.statusCode;
  }

  it("activates directly, lists and reads blocks and devices, sends commands", async () => {
    const node = "APICLIENT0001";
    const blockToken = await api.activateDirect(node);
    expect(blockToken).toMatch(/^\S{16,}$/);
    expect(await blockPost(node, blockToken, "data", { G: "1", V: 0, D: 1002, DA: "0" })).toBe(200);
    expect(await blockPost(node, blockToken, "data", { G: "2", V: 0, D: 9, DA: "21.5" })).toBe(200);

    expect(Object.keys(await api.blocks())).toContain(node);
    expect((await api.block(node)).short_name).toEqual(expect.any(String));
    const devices = await api.devices();
    const relay = `${node}_1_0_1002`;
    expect(devices[relay]).toMatchObject({ node, device_type: "relay", is_actuator: 1 });
    expect(await api.device(relay)).toMatchObject({ guid: relay, last_data: { DA: 0 } });
    expect(await api.heartbeat(`${node}_2_0_9`)).toMatchObject({ GUID: `${node}_2_0_9`, DA: 21.5, node });
    expect((await api.history(`${node}_2_0_9`, { from: 0 })).map((p) => p.v)).toEqual([21.5]);

    await api.actuate(relay, "1");
    await api.rename(relay, "Lamp");
    expect((await api.device(relay)).shortName).toBe("Lamp");
    const polled = await request(`${base}/block/${node}/commands`, { headers: { "x-service-token": blockToken } });
    expect(((await polled.body.json()) as { DEVICE: { DA: string }[] }).DEVICE.map((c) => c.DA)).toEqual(["1"]);
  });

  it("manages a device's callback", async () => {
    const node = "APICLIENT0002";
    const t = await api.activateDirect(node);
    await blockPost(node, t, "data", { G: "1", V: 0, D: 9, DA: "20" });
    const guid = `${node}_1_0_9`;
    await api.addCallback(guid, "http://127.0.0.1:9/a");
    expect((await api.callback(guid)).url).toBe("http://127.0.0.1:9/a");
    await expect(api.addCallback(guid, "http://127.0.0.1:9/b")).rejects.toMatchObject({ status: 409 });
    await api.setCallback(guid, "http://127.0.0.1:9/b");
    expect((await api.callback(guid)).url).toBe("http://127.0.0.1:9/b");
    await api.removeCallback(guid);
    await expect(api.callback(guid)).rejects.toMatchObject({ status: 404 });
    await api.deleteDevice(guid);
    await expect(api.device(guid)).rejects.toBeInstanceOf(ApiError);
  });

  it("reports the service's error with its status, without the token", async () => {
    const err = (await api.claimBlock("NOTWAITING0001").catch((e: unknown) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(404);
    expect(err.serviceError).toMatch(/not awaiting activation/);
    const bad = new ApiClient({ baseUrl: base, token: "wrong-token-000000" });
    const e2 = (await bad.devices().catch((e: unknown) => e)) as ApiError;
    expect(e2.status).toBe(401);
    expect(e2.message).not.toContain("wrong-token");
    const down = new ApiClient({ baseUrl: "http://127.0.0.1:9/rest/v0", token: TOKEN, timeoutMs: 2000 });
    await expect(down.devices()).rejects.toMatchObject({ status: 0 });
  });
});

describe("ApiClient request shapes (mock dispatcher)", () => {
  it("sends rules, sub-devices, OAuth credential and snapshots where the spec says", async () => {
    const agent = new MockAgent();
    agent.disableNetConnect();
    const pool = agent.get("http://svc.test:8000");
    const seen: string[] = [];
    const reply = (data?: unknown) => ({ statusCode: 200, data: JSON.stringify({ result: 1, error: null, id: 0, ...(data === undefined ? {} : { data }) }) });
    pool
      .intercept({ path: (p) => p.startsWith("/rest/v0/"), method: () => true })
      .reply((o) => {
        seen.push(`${o.method} ${o.path} ${typeof o.body === "string" ? o.body : ""}`);
        if (o.path.startsWith("/rest/v0/rule?") && o.method === "POST") return reply({ rid: "12" });
        if (o.path.includes("/subdevice?") && o.method === "POST") return reply({ id: "s1", token: "tk" });
        return reply(o.method === "GET" ? [] : undefined);
      })
      .persist();
    agent
      .get("http://svc.test:8001")
      .intercept({ path: (p) => p.startsWith("/rest/v0/camera/G1/snapshot?"), method: "GET" })
      .reply(200, Buffer.from([0xff, 0xd8, 0xff, 0xd9]), { headers: { "content-type": "image/jpeg" } });
    const api = new ApiClient({ baseUrl: "http://svc.test:8000/rest/v0", token: "oa", tokenKind: "oauth", dispatcher: agent });
    const rule = { shortName: "r", preconditions: [{ handler: "serviceChange", params: { guid: "G1", to: "1" } }], actions: [] };
    expect(await api.createRule(rule)).toBe("12");
    await api.suspendRule(12);
    await api.unsuspendRule(12);
    await api.updateRule(12, rule);
    await api.deleteRule(12);
    expect(await api.addSubdevice("G1", { category: "rf", type: "sensor", shortName: "door", data: "0101" })).toEqual({ id: "s1", token: "tk" });
    await api.tickle("G1", "s1", "tk");
    expect([...(await api.snapshot("G1"))]).toEqual([0xff, 0xd8, 0xff, 0xd9]);
    expect(seen).toEqual([
      `POST /rest/v0/rule?access_token=oa ${JSON.stringify(rule)}`,
      "POST /rest/v0/rule/12/suspend?access_token=oa ",
      "DELETE /rest/v0/rule/12/suspend?access_token=oa ",
      `PUT /rest/v0/rule/12?access_token=oa ${JSON.stringify(rule)}`,
      "DELETE /rest/v0/rule/12?access_token=oa ",
      'POST /rest/v0/device/G1/subdevice?access_token=oa {"category":"rf","type":"sensor","shortName":"door","data":"0101"}',
      "POST /rest/v0/device/G1/subdevice/s1/tickle/tk ",
    ]);
    await agent.close();
  });
});
