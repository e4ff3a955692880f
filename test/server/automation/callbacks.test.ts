import { createHmac, timingSafeEqual } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DELIVERY_HEADER, SIGNATURE_HEADER } from "../../../protocol/automation.js";
import { type TestServer, startTestServer } from "../../helpers/server.js";
import { type Receiver, startReceiver } from "./helpers.js";

const NODE = "CALLBACK0001";
const GUID = `${NODE}_0_0_9`;

describe("callback delivery", () => {
  let t: TestServer;
  let bt: string;
  let receiver: Receiver;
  const q = (): string => `user_access_token=${t.token}`;
  const data = (DA: string) =>
    t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 9, DA } });
  const bodies = (): unknown[] => receiver.received.map((r) => (JSON.parse(r.body.toString()) as { DA: unknown }).DA);

  beforeEach(async () => {
    receiver = await startReceiver();
    t = await startTestServer({ automation: { callbacks: { retryDelaysMs: [50, 100, 200, 400, 800], maxQueued: 5, timeoutMs: 2000 } } });
    bt = await t.activate(NODE);
    await data("20");
    const res = await t.api({ method: "POST", url: `/device/${GUID}/callback?${q()}`, payload: { url: `${receiver.url}/cb?k=1` } });
    expect(res.statusCode).toBe(200);
  });
  afterEach(async () => {
    receiver.release();
    await t.close();
    await receiver.close();
  });

  it("POSTs the signed payload that a receiver can verify with the secret of GET", async () => {
    await data("21.5");
    const got = await receiver.nth(1);
    expect(got.method).toBe("POST");
    expect(got.url).toBe("/cb?k=1");
    const payload = JSON.parse(got.body.toString()) as Record<string, unknown>;
    expect(payload).toMatchObject({ GUID, G: "0", V: 0, D: 9, DA: 21.5, node: NODE });
    expect(Object.keys(payload).sort()).toEqual(["D", "DA", "G", "GUID", "V", "node", "timestamp"]);
    expect(typeof payload.timestamp).toBe("number");
    const { data: { secret } } = (await t.api({ method: "GET", url: `/device/${GUID}/callback?${q()}` })).json() as { data: { secret: string } };
    const expected = Buffer.from(`sha256=${createHmac("sha256", secret).update(got.body).digest("hex")}`);
    const header = Buffer.from(String(got.headers[SIGNATURE_HEADER]));
    expect(header.length === expected.length && timingSafeEqual(header, expected)).toBe(true);
    expect(got.headers[DELIVERY_HEADER]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("retries with backoff and keeps the device's order", async () => {
    receiver.statuses = [500, 503];
    await data("1");
    await data("2");
    await data("3");
    await receiver.nth(5);
    expect(bodies()).toEqual([1, 1, 1, 2, 3]);
    // The same delivery id on every retry of one event.
    expect(receiver.received[0]?.headers[DELIVERY_HEADER]).toBe(receiver.received[2]?.headers[DELIVERY_HEADER]);
    await t.server.services.automation.callbacks.idle();
    expect(t.server.services.automation.callbacks.stats).toMatchObject({ delivered: 3, retries: 2 });
  });

  it("sends nothing once DELETE has returned", async () => {
    receiver.status = 500;
    await data("1");
    await receiver.nth(1);
    const del = await t.api({ method: "DELETE", url: `/device/${GUID}/callback?${q()}` });
    expect(del.statusCode).toBe(200);
    const atDelete = receiver.received.length;
    await t.server.services.automation.callbacks.idle();
    await data("2");
    await t.server.services.automation.callbacks.idle();
    expect(receiver.received.length).toBe(atDelete);
  });

  it("a receiver that does not answer neither slows ingest nor grows the queue without bound", async () => {
    receiver.hold = true;
    for (let i = 0; i < 12; i++) expect((await data(String(i))).statusCode).toBe(200);
    await receiver.nth(1);
    // Every data event was acknowledged while the first delivery is still unanswered.
    expect(receiver.received).toHaveLength(1);
    const cb = t.server.services.automation.callbacks;
    await expect.poll(() => cb.stats.dropped, { timeout: 3000 }).toBe(7);
    expect(cb.depth).toBe(5);
    receiver.release();
    await receiver.nth(5);
    await cb.idle();
    expect(bodies()).toEqual([0, 1, 2, 3, 4]);
  });
});
