/**
 * End to end: the real `blockkit server` process on loopback. A block activates the two-legged
 * way, posts data, the user actuates a device and the block receives the command on its long-poll.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../helpers/http.js";
import { waitFor } from "../helpers/wait.js";
import { type CliProcess, startServerProcess, stopProcess } from "../helpers/process.js";

const ADMIN = "e2e-admin-token-000000000001";
const NODE = "E2EFLOW00000001";

describe("blockkit server process: activation, data, actuation", () => {
  let dir: string;
  let srv: CliProcess & { baseUrl: string };
  const user = (path: string): string => `${srv.baseUrl}${path}${path.includes("?") ? "&" : "?"}user_access_token=${ADMIN}`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-e2e-"));
    srv = await startServerProcess({ dataDir: dir, adminToken: ADMIN, pollHoldSeconds: 2 });
  });
  afterAll(async () => {
    if (srv) await stopProcess(srv);
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints its three URLs and answers on base_url", async () => {
    expect(srv.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/rest\/v0$/);
    await srv.waitForLine(/^auth_url\s+http:\/\/127\.0\.0\.1:\d+$/);
    await srv.waitForLine(/^stream_url\s+http:\/\/127\.0\.0\.1:\d+$/);
    await srv.waitForErrLine(/"msg":"Server listening at http:\/\/127\.0\.0\.1:\d+"/);
    const res = await http<{ result: number; data: unknown }>(user("/devices"));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 1, error: null, id: 0, data: {} });
  });

  it("activates two-legged, posts data, actuates and delivers the command on the long-poll", async () => {
    // The block holds its activation request; the user claims it meanwhile.
    const held = http<{ token: string }>(`${srv.baseUrl}/block/${NODE}/activate`);
    const claim = await waitFor(
      "the claim of an awaiting block",
      async () => {
        const answer = await http(user("/block"), { method: "POST", json: { nodeid: NODE } });
        // 404: the held request has not reached the server yet.
        return answer.status === 404 ? undefined : answer;
      },
      5000,
    );
    expect(claim.status).toBe(200);
    expect(claim.body).toEqual({ result: 1, error: null, id: 0 });
    const activation = await held;
    expect(activation.status).toBe(200);
    expect(Object.keys(activation.body)).toEqual(["token"]);
    const token = activation.body.token;
    expect(token.length).toBeGreaterThanOrEqual(32);
    const block = { "x-service-token": token };

    // The block reports a relay and a temperature.
    const data = await http(`${srv.baseUrl}/block/${NODE}/data`, { method: "POST", headers: block, json: { G: "0", V: 0, D: 1002, DA: "0" } });
    expect(data.body).toEqual({ result: 1, error: null, id: 0 });
    const hb = await http(`${srv.baseUrl}/block/${NODE}/heartbeat`, {
      method: "POST",
      headers: block,
      json: [{ G: "0", V: 0, D: 9, DA: "21.5" }],
    });
    expect(hb.body).toEqual({ result: 1, error: null, id: 0 });

    const relay = `${NODE}_0_0_1002`;
    const dev = await http<{ data: { guid: string; device_type: string; is_actuator: number; last_data: { DA: unknown } } }>(user(`/device/${relay}`));
    expect(dev.body.data).toMatchObject({ guid: relay, device_type: "relay", is_actuator: 1, last_data: { DA: 0 } });
    const blocks = await http<{ data: Record<string, { last_active: number }> }>(user("/block"));
    expect(Object.keys(blocks.body.data)).toEqual([NODE]);

    // A poll held before the command arrives is woken by it.
    const poll = http<{ DEVICE: unknown[] }>(`${srv.baseUrl}/block/${NODE}/commands`, { headers: block });
    const put = await http(user(`/device/${relay}`), { method: "PUT", json: { DA: "1" } });
    expect(put.body).toEqual({ result: 1, error: null, id: 0 });
    const got = await poll;
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ DEVICE: [{ G: "0", V: 0, D: 1002, DA: "1", GUID: relay }] });

    // Delivered once: the next poll carries only the newer command.
    expect((await http(user(`/device/${relay}`), { method: "PUT", json: { DA: "0" } })).status).toBe(200);
    const next = await http<{ DEVICE: unknown[] }>(`${srv.baseUrl}/block/${NODE}/commands`, { headers: block });
    expect(next.body).toEqual({ DEVICE: [{ G: "0", V: 0, D: 1002, DA: "0", GUID: relay }] });

    // A refused request is logged at most in debug; no credential ever reaches the log.
    expect((await http(`${srv.baseUrl}/devices?user_access_token=wrong-${token}`)).status).toBe(401);
    const log = srv.stderr.join("\n");
    expect(log).not.toContain(ADMIN);
    expect(log).not.toContain(token);
  });

  it("over real HTTP: a 5 MB body is 413, malformed JSON 400, each with the envelope, and the server keeps serving", async () => {
    const act = await http<{ token: string }>(user(`/block/E2EFLOW00000002/activate`));
    const headers = { "x-service-token": act.body.token, "content-type": "application/json" };
    // Several times: a server that closes on the unread rest of the body makes some of these
    // fail with EPIPE/ECONNRESET instead of a readable 413.
    const body = JSON.stringify({ G: "0", V: 0, D: 9, DA: "x".repeat(5_000_000) });
    for (let i = 0; i < 6; i++) {
      const big = await fetch(`${srv.baseUrl}/block/E2EFLOW00000002/data`, { method: "POST", headers, body });
      expect(big.status).toBe(413);
      expect(await big.json()).toEqual({ result: 0, error: "request body too large (limit 64 KiB)", id: 0 });
    }
    const bad = await fetch(`${srv.baseUrl}/block/E2EFLOW00000002/data`, { method: "POST", headers, body: '{"G":' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ result: 0, id: 0, error: expect.stringMatching(/malformed JSON/) });
    expect((await http(user("/devices"))).status).toBe(200);
  });
});
