/**
 * Hostile input at the schema, over real sockets (so that block events take the fast lane as
 * well as fastify): V and D, a rule's timeout, nesting depth, oversized snapshots and headers.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, startTestServer } from "../../helpers/server.js";

const NODE = "LIMITSINPUT01";
const TEMP = `${NODE}_0_0_9`;
const RELAY = `${NODE}_0_0_1002`;

interface Raw {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

/** One request on its own connection; `body` is sent as given (chunked when no length is wanted). */
function raw(url: string, method: string, headers: Record<string, string>, body?: string | Buffer, chunked = false): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const h = { ...headers, ...(body !== undefined && !chunked ? { "content-length": String(Buffer.byteLength(body)) } : {}) };
    const req = request(url, { method, headers: h, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), headers: res.headers }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

function expectEnvelope(a: Raw, status: number, mention: RegExp): void {
  expect({ status: a.status, text: a.text }).toMatchObject({ status });
  const body = JSON.parse(a.text) as { result: number; error: string; id: number };
  expect(body).toEqual({ result: 0, error: expect.any(String), id: 0 });
  expect(body.error).toMatch(mention);
}

function nested(depth: number): string {
  return `${"[".repeat(depth)}1${"]".repeat(depth)}`;
}

describe("input limits at the schema", () => {
  let t: TestServer;
  let bt: string;
  let base: string;
  let stream: string;

  beforeAll(async () => {
    t = await startTestServer({}, { listen: true });
    base = t.baseUrl as string;
    stream = `http://127.0.0.1:${(t.server.stream.server.address() as { port: number }).port}`;
    bt = await t.activate(NODE);
    await block("data", '{"G":"0","V":0,"D":1004,"DA":"0"}');
    await block("data", '{"G":"0","V":0,"D":1002,"DA":"0"}');
  });
  afterAll(async () => {
    await t.close();
  });

  const block = (kind: string, body: string) =>
    raw(`${base}/block/${NODE}/${kind}`, "POST", { "content-type": "application/json", "x-service-token": bt }, body);
  const rule = (body: string) => raw(`${base}/rule?user_access_token=${t.token}`, "POST", { "content-type": "application/json" }, body);
  const ruleWith = (timeout: string, extra = "") =>
    rule(
      `{"shortName":"t","preconditions":[{"handler":"serviceChange","params":{"guid":"${TEMP}","to":"1"}}],` +
        `"actions":[{"handler":"serviceSendCommand","params":{"guid":"${RELAY}","da":"1"${extra}}}]${timeout === "" ? "" : `,"timeout":${timeout}`}}`,
    );

  const badIds = ['"Infinity"', '"-Infinity"', "1e400", "5.5", "-1", '"0x10"', '" 7"', '"1e3"', '"5.5"', '""', "1000000000"];

  it("V and D are non-negative integers, as JSON numbers or strings of digits, in data, heartbeat and config events", async () => {
    for (const v of badIds) {
      expectEnvelope(await block("data", `{"G":"0","V":0,"D":${v},"DA":"1"}`), 400, /body\/D must be a non-negative integer/);
      expectEnvelope(await block("data", `{"G":"0","V":${v},"D":9,"DA":"1"}`), 400, /body\/V must be a non-negative integer/);
      expectEnvelope(await block("heartbeat", `[{"G":"0","V":${v},"D":9,"DA":"1"}]`), 400, /body\/0\/V must be a non-negative integer/);
      expectEnvelope(await block("config", `{"G":"0","V":0,"D":${v},"type":"PLUGIN"}`), 400, /body\/D must be a non-negative integer/);
    }
    for (const body of ['{"G":"0","V":0,"D":9,"DA":"20"}', '{"G":"0","V":"0","D":"9","DA":"21"}']) {
      expect((await block("data", body)).status).toBe(200);
    }
    expect((await block("heartbeat", '[{"G":"0","V":"0","D":"9","DA":"22"}]')).status).toBe(200);
    expect((await block("config", '{"G":"0","V":"0","D":"9","type":"PLUGIN"}')).status).toBe(200);
    const device = await raw(`${base}/device/${TEMP}?user_access_token=${t.token}`, "GET", {});
    expect(JSON.parse(device.text)).toMatchObject({ data: { last_data: { DA: 22 } } });
  });

  it("a rule's timeout is a finite non-negative number", async () => {
    for (const v of ['"Infinity"', '"-Infinity"', "1e400", "-1", '"-1"', '"abc"', "31536001"]) {
      expectEnvelope(await ruleWith(v), 400, /body\/timeout must be a finite non-negative number/);
    }
    for (const v of ["0", "30", "5.5", '"30"']) {
      const created = await ruleWith(v);
      expect(created.status, `${v}: ${created.text}`).toBe(200);
      const rid = (JSON.parse(created.text) as { data: { rid: string } }).data.rid;
      const got = JSON.parse((await raw(`${base}/rule/${rid}?user_access_token=${t.token}`, "GET", {})).text) as { data: { timeout: unknown } };
      expect(got.data.timeout).toBe(Number(JSON.parse(v)));
    }
  });

  it("JSON nested deeper than the bound is 400, on every route and the fast lane", async () => {
    const deep = nested(5000);
    expectEnvelope(await ruleWith("0", `,"x":${deep}`), 400, /nested deeper than 32 levels/);
    expectEnvelope(await rule(`{"shortName":"t","x":${deep}}`), 400, /nested deeper than 32 levels/);
    expectEnvelope(await block("data", `{"G":"0","V":0,"D":9,"DA":"1","x":${deep}}`), 400, /nested deeper than 32 levels/);
    expectEnvelope(await block("config", `{"G":"0","V":0,"D":9,"type":"X","x":${deep}}`), 400, /nested deeper than 32 levels/);
    // Brackets inside strings are text, not nesting.
    expect((await block("data", `{"G":"0","V":0,"D":9,"DA":${JSON.stringify("[".repeat(100))}}`)).status).toBe(200);
    expect((await block("data", `{"G":"0","V":0,"D":9,"DA":"1","x":${nested(30)}}`)).status).toBe(200);
  });

  it("an oversized snapshot is read, discarded and answered 413, with or without a length", async () => {
    const big = Buffer.alloc(11 * 1024 * 1024, 7);
    const url = `${stream}/rest/v0/camera/${NODE}_0_0_1004/snapshot`;
    const headers = { "x-service-token": bt, "content-type": "image/jpeg" };
    for (let i = 0; i < 3; i++) {
      expectEnvelope(await raw(url, "POST", headers, big), 413, /larger than 10 MiB/);
      expectEnvelope(await raw(url, "POST", { ...headers, "transfer-encoding": "chunked" }, big, true), 413, /limit 10 MiB/);
      expectEnvelope(await raw(url, "POST", { "content-type": "image/jpeg" }, big), 401, /block token/);
    }
  });

  it("headers over the limit get 431 with the envelope", async () => {
    expectEnvelope(await raw(`${base}/devices`, "GET", { "x-big": "a".repeat(20_000) }), 431, /headers too large/);
    expectEnvelope(await raw(`${stream}/healthz`, "GET", { "x-big": "a".repeat(20_000) }), 431, /headers too large/);
  });
});
