/**
 * One user's receiver that never answers must not starve another user's callbacks: queues are
 * bounded per user, attempts in flight per user, and drops are counted per reason.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type TestServer, startTestServer } from "../../helpers/server.js";
import { type Receiver, startReceiver } from "../automation/helpers.js";

const A = "FAIRCALLBACKA1";
const B = "FAIRCALLBACKB1";

describe("callback fairness between users", () => {
  let t: TestServer;
  let hanging: Receiver;
  let healthy: Receiver;

  beforeEach(async () => {
    hanging = await startReceiver();
    hanging.hold = true;
    healthy = await startReceiver();
    t = await startTestServer({
      automation: { callbacks: { maxQueued: 30, maxQueuedPerUser: 20, maxInFlightPerUser: 2, timeoutMs: 20_000, retryDelaysMs: [50] } },
    });
  });
  afterEach(async () => {
    await t.close();
    hanging.release();
    await Promise.all([hanging.close(), healthy.close()]);
  });

  const send = (node: string, token: string, kind: "data" | "heartbeat", payload: unknown) =>
    t.api({ method: "POST", url: `/block/${node}/${kind}`, headers: { "x-service-token": token }, payload: payload as object });
  const callback = (guid: string, url: string, userToken: string) =>
    t.api({ method: "POST", url: `/device/${guid}/callback?user_access_token=${userToken}`, payload: { url } });

  it("a never-answering receiver costs its user's share only; another user's deliveries go on", async () => {
    const bTokenUser = await t.addUser("bob");
    const at = await t.activate(A);
    const bt = await t.activate(B, bTokenUser);
    const ports = Array.from({ length: 10 }, (_, g) => String(g));
    expect((await send(A, at, "heartbeat", ports.map((G) => ({ G, V: 0, D: 9, DA: "1" })))).statusCode).toBe(200);
    for (const G of ports) expect((await callback(`${A}_${G}_0_9`, `${hanging.url}/a`, t.token)).statusCode).toBe(200);
    expect((await send(B, bt, "data", { G: "0", V: 0, D: 9, DA: "1" })).statusCode).toBe(200);
    expect((await callback(`${B}_0_0_9`, `${healthy.url}/b`, bTokenUser)).statusCode).toBe(200);

    // 40 events for A's ten devices: more than A's share (20) and than the whole queue (30).
    for (let i = 0; i < 4; i++) expect((await send(A, at, "heartbeat", ports.map((G) => ({ G, V: 0, D: 9, DA: String(i) })))).statusCode).toBe(200);
    const cb = t.server.services.automation.callbacks;
    await expect.poll(() => cb.drops.user_queue_full, { timeout: 3000 }).toBe(20);
    for (const DA of ["10", "11", "12"]) await send(B, bt, "data", { G: "0", V: 0, D: 9, DA });
    await healthy.nth(3, 3000);
    expect(healthy.received.map((r) => (JSON.parse(r.body.toString()) as { DA: number }).DA)).toEqual([10, 11, 12]);
    // A's receiver holds at most A's attempts in flight.
    expect(hanging.received.length).toBe(2);
    expect(cb.drops).toMatchObject({ queue_full: 0, device_queue_full: 0, user_queue_full: 20 });
  });
});
