/**
 * The outbound policy on the server's three outbound paths (callbacks, webhook actuators, File Host
 * PUTs), with the server listening on loopback: its own listeners are refused by default, an
 * operator's deny list holds, refusals are counted, and the texts users see stay generic.
 */
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { DeviceRow } from "../../../server/store/types.js";
import { type TestServer, startTestServer } from "../../helpers/server.js";
import { type Receiver, startReceiver } from "../automation/helpers.js";

interface Env<T = unknown> {
  result: number;
  error: string | null;
  data: T;
}

const NODE = "OUTBOUNDPOLICY1";

describe("outbound policy on callbacks, webhooks and File Host targets", () => {
  let t: TestServer;
  let receiver: Receiver;
  afterEach(async () => {
    await t.close();
    await receiver.close();
  });

  /**
   * Points each path at `url`, fires each once, and answers what users and the operator see. The
   * URLs are stored past the routes (which refuse a literal address the policy refuses): they stand
   * for URLs registered before the operator changed the policy, or host names that resolve there.
   */
  async function fireAll(url: string) {
    const q = `user_access_token=${t.token}`;
    const s = t.server.services;
    const { userId } = await s.auth.user({ user_access_token: t.token });
    // Webhook actuator.
    const hooks = ((await t.server.api.inject({ method: "GET", url: `/auth/webhook?${q}` })).json() as Env<{ guid: string }>).data.guid;
    const { id: sid } = await s.automation.subdevices.create(userId, hooks, { category: "webhook", type: "actuator", shortName: "W", data: "w", url: `${url}/hook` });
    const webhook = await t.api({ method: "PUT", url: `/device/${hooks}?${q}`, payload: { DA: "w" } });
    // Callback.
    const bt = await t.activate(NODE);
    const send = () => t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 9, DA: "21" } });
    expect((await send()).statusCode).toBe(200);
    const cbDevice = (await s.store.devices.byGuid(`${NODE}_0_0_9`)) as DeviceRow;
    await s.store.callbacks.set({ device_id: cbDevice.id, url: `${url}/cb`, secret: "s".repeat(32), created: Date.now() });
    expect((await send()).statusCode).toBe(200);
    await s.automation.callbacks.idle();
    // File Host PUT (the sendToFileHost action's own call).
    const host = ((await t.server.api.inject({ method: "GET", url: `/auth/filehost?${q}` })).json() as Env<{ guid: string }>).data.guid;
    const device = (await s.store.devices.byGuid(host)) as DeviceRow;
    await s.store.devices.patchMeta(device.id, { path: ["target"], value: `${url}/files` });
    const file = await s.automation.fileHost
      .store((await s.store.devices.byGuid(host)) as DeviceRow, "snap.jpg", { guid: host, body: Buffer.from("jpeg"), contentType: "image/jpeg", at: 0 }, new AbortController().signal)
      .then(
        (r) => ({ ok: true, text: r }),
        (e: unknown) => ({ ok: false, text: (e as Error).message }),
      );
    return { sid, webhook, file, callbacks: s.automation.callbacks, refused: s.limits.hits.get("outbound") ?? 0 };
  }

  it("refuses the server's own API and stream ports by default, without connecting", async () => {
    receiver = await startReceiver();
    t = await startTestServer({ automation: { callbacks: { retryDelaysMs: [] }, outgoingTimeoutMs: 1000 } }, { listen: true });
    let own = 0;
    t.server.api.server.on("connection", () => own++);
    t.server.stream.server.on("connection", () => own++);
    const apiPort = (t.server.api.server.address() as AddressInfo).port;
    const got = await fireAll(`http://127.0.0.1:${apiPort}`);
    expect(got.webhook.statusCode).toBe(503);
    expect((got.webhook.json() as Env).error).toBe(`webhook actuator ${got.sid}: the call failed (no 2xx answer within 1000 ms)`);
    expect(got.file).toEqual({ ok: false, text: `PUT http://127.0.0.1:${apiPort}: the call failed (no 2xx answer within 1000 ms)` });
    expect(got.callbacks.drops).toMatchObject({ gave_up: 0, outbound_refused: 1 });
    expect(got.refused).toBe(3);
    // The stream port too, under another name of this host.
    const streamPort = (t.server.stream.server.address() as AddressInfo).port;
    const cbDevice = (await t.server.services.store.devices.byGuid(`${NODE}_0_0_9`)) as DeviceRow;
    await t.server.services.store.callbacks.set({ device_id: cbDevice.id, url: `http://localhost:${streamPort}/cb`, secret: "s".repeat(32), created: Date.now() });
    const bt = await t.activate(NODE);
    expect((await t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 9, DA: "22" } })).statusCode).toBe(200);
    await got.callbacks.idle();
    expect(got.callbacks.drops.outbound_refused).toBe(2);
    expect(own).toBe(0);
    // A receiver on another loopback port is reached as before (LAN and loopback targets stay possible).
    const ok = await startReceiver();
    try {
      const q = `user_access_token=${t.token}`;
      const hooks = ((await t.server.api.inject({ method: "GET", url: `/auth/webhook?${q}` })).json() as Env<{ guid: string }>).data.guid;
      await t.api({ method: "POST", url: `/device/${hooks}/subdevice?${q}`, payload: { category: "webhook", type: "actuator", shortName: "Ok", data: "ok", url: `${ok.url}/hook` } });
      expect((await t.api({ method: "PUT", url: `/device/${hooks}?${q}`, payload: { DA: "ok" } })).statusCode).toBe(200);
      expect((await ok.nth(1)).url).toBe("/hook");
    } finally {
      await ok.close();
    }
    expect(receiver.received).toHaveLength(0);
  });

  it("holds an operator's --outbound-deny network on all three paths; a refused callback is dropped at once, with why", async () => {
    receiver = await startReceiver();
    const lines: string[] = [];
    const logger = pino({ level: "warn" }, new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString()), done()) }));
    // Retries configured: a policy refusal is not retried (a retry would be refused the same way).
    t = await startTestServer({ logger, outbound: { deny: ["127.0.0.0/8"] }, automation: { callbacks: { retryDelaysMs: [20, 20, 20] }, outgoingTimeoutMs: 1000 } });
    const got = await fireAll(receiver.url);
    expect(got.webhook.statusCode).toBe(503);
    expect((got.webhook.json() as Env).error).toBe(`webhook actuator ${got.sid}: the call failed (no 2xx answer within 1000 ms)`);
    expect(got.file).toEqual({ ok: false, text: `PUT ${receiver.url}: the call failed (no 2xx answer within 1000 ms)` });
    expect(got.callbacks.drops).toMatchObject({ gave_up: 0, outbound_refused: 1 });
    expect(got.callbacks.stats).toMatchObject({ retries: 0, failed: 1 });
    expect(got.refused).toBe(3);
    const drop = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => String(l.msg).startsWith("callback delivery"));
    expect(drop).toMatchObject({
      msg: "callback delivery refused by the outbound policy, not retried",
      url: `${receiver.url}/cb`,
      attempts: 1,
      why: expect.stringMatching(/^refused by the outbound policy: 127\.0\.0\.1:\d+ is in a denied network \(127\.0\.0\.0\/8\)/),
    });
    const metrics = await t.server.api.inject({ method: "GET", url: "/metrics" });
    expect(metrics.body).toMatch(/^blockkit_callback_drops_total\{reason="outbound_refused"\} 1$/m);
    expect(receiver.received).toHaveLength(0);
  });
});
