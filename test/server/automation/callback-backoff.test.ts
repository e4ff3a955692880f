/** Unit test of the dispatcher's default retry schedule, with fake timers and undici's MockAgent. */
import pino from "pino";
import { MockAgent } from "undici";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CallbackDispatcher } from "../../../server/services/automation/callbacks.js";
import type { CommittedEvent } from "../../../server/services/ingest.js";
import type { CallbackRow, Store } from "../../../server/store/types.js";

const event: CommittedEvent = {
  kind: "data",
  userId: 1,
  node: "BACKOFF00001",
  guid: "BACKOFF00001_0_0_9",
  G: "0",
  V: 0,
  D: 9,
  DA: "20",
  num: 20,
  ts: 1_700_000_000_000,
  deviceId: 7,
  created: false,
};

describe("callback retry schedule", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("tries 7 times over about a minute with doubling waits, then gives up", async () => {
    vi.useFakeTimers();
    const row: CallbackRow = { device_id: 7, url: "http://receiver.test/cb", secret: "s", created: 0 };
    const store = { callbacks: { get: async () => row, byDevices: async () => [row] } } as unknown as Store;
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
    const d = new CallbackDispatcher(store, pino({ level: "silent" }), { dispatcher: agent });
    d.onCommitted([event]);
    await vi.advanceTimersByTimeAsync(70_000);
    expect(attempts).toEqual([0, 1000, 3000, 7000, 15_000, 31_000, 63_000]);
    expect(d.stats).toMatchObject({ delivered: 0, retries: 6, failed: 1 });
    await d.stop();
    await agent.close();
  });
});
