/**
 * The dispatcher's retry schedule over a real store's outbox: a failed attempt goes back to the
 * outbox with its next time and is tried again then. The default schedule with fake timers (the
 * embedded store in memory, whose calls need no I/O, and undici's MockAgent); a short schedule on
 * every store with the real clock and a real receiver on loopback.
 */
import pino from "pino";
import { MockAgent } from "undici";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DELIVERY_HEADER } from "../../../protocol/automation.js";
import { CallbackDispatcher } from "../../../server/services/automation/callbacks.js";
import type { CommittedEvent } from "../../../server/services/ingest.js";
import { openStore } from "../../../server/store/index.js";
import type { Store } from "../../../server/store/types.js";
import { STORES, dataEvent } from "../../helpers/stores.js";
import { startReceiver } from "./helpers.js";

const NODE = "BACKOFF00001";

/** A device with a callback to `url`, and one reading of it committed (its delivery in the outbox). */
async function committedWithCallback(store: Store, url: string): Promise<CommittedEvent> {
  const user = (await store.users.create("backoff", null, 1)).id;
  const [first] = await store.events.commit([dataEvent(user, NODE, 9, "19", Date.now() - 1)]);
  await store.callbacks.set({ device_id: first?.deviceId as number, url, secret: "s", created: 1 });
  const e = dataEvent(user, NODE, 9, "20", Date.now());
  const [r] = await store.events.commit([e]);
  expect(r?.outboxed).toBe(true);
  return { ...e, deviceId: r?.deviceId as number, created: false, outboxed: true };
}

describe("callback retry schedule", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("tries 7 times over about a minute with doubling waits, then gives up (the default schedule)", async () => {
    vi.useFakeTimers();
    const store = await openStore("sqlite::memory:");
    const agent = new MockAgent();
    agent.disableNetConnect();
    const attempts: number[] = [];
    const start = Date.now();
    agent
      .get("http://receiver.test")
      .intercept({ path: "/cb", method: "POST" })
      .reply(() => {
        attempts.push(Date.now() - start);
        return { statusCode: 503, data: "" };
      })
      .persist();
    const event = await committedWithCallback(store, "http://receiver.test/cb");
    const d = new CallbackDispatcher(store, pino({ level: "silent" }), { dispatcher: agent });
    d.start();
    d.onCommitted([event]);
    await vi.advanceTimersByTimeAsync(70_000);
    // Each at its time, or the fake clock's millisecond after (a claim runs at the end of the turn
    // of the event loop, setImmediate, which the fake timers run a tick later).
    const schedule = [0, 1000, 3000, 7000, 15_000, 31_000, 63_000];
    expect(attempts).toHaveLength(schedule.length);
    attempts.forEach((t, i) => expect(t - (schedule[i] as number)).toBeOneOf([0, 1, 2, 3, 4, 5, 6, 7]));
    expect(d.stats).toMatchObject({ delivered: 0, retries: 6, failed: 1 });
    // Given up: gone from the outbox.
    expect(await store.outbox.depth()).toBe(0);
    await d.stop();
    await agent.close();
    await store.close();
  });

  describe.each(STORES)("on $name, real clock", (impl) => {
    it("waits at least each delay of the schedule between attempts, with the same delivery id, then gives up", async () => {
      const { store, dispose } = await impl.open();
      const receiver = await startReceiver();
      receiver.status = 503;
      const d = new CallbackDispatcher(store, pino({ level: "silent" }), { retryDelaysMs: [100, 200, 400] });
      try {
        const event = await committedWithCallback(store, `${receiver.url}/cb`);
        d.start();
        d.onCommitted([event]);
        await receiver.nth(4, 10_000);
        await d.idle();
        expect(receiver.received).toHaveLength(4);
        const at = receiver.received.map((r) => r.at);
        const gaps = at.slice(1).map((t, i) => t - (at[i] as number));
        gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual([100, 200, 400][i] as number));
        expect(new Set(receiver.received.map((r) => r.headers[DELIVERY_HEADER])).size).toBe(1);
        expect(d.stats).toMatchObject({ delivered: 0, retries: 3, failed: 1 });
        expect(await store.outbox.depth()).toBe(0);
      } finally {
        await d.stop();
        await receiver.close();
        await dispose();
      }
    });
  });
});
