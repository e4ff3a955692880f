/**
 * The warnings of callback deliveries given up (server/services/automation/given-up-log.ts). A dead
 * receiver under many devices gave a line per delivery; now the first is logged at once with its
 * detail, the next ones are counted per callback and logged together at most once a minute, and the
 * dispatcher's stop logs what is still counted. The dispatcher on a real store with a real receiver
 * on loopback that answers 503; the once-a-minute cadence with fake timers on the log alone.
 */
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CallbackDispatcher } from "../../../server/services/automation/callbacks.js";
import { GivenUpLog, MOST_LISTED } from "../../../server/services/automation/given-up-log.js";
import type { CommittedEvent } from "../../../server/services/ingest.js";
import { dataEvent, sqliteStore } from "../../helpers/stores.js";
import { waitFor } from "../../helpers/wait.js";
import { startReceiver } from "./helpers.js";

interface Line {
  level: number;
  msg: string;
  [k: string]: unknown;
}

const capture = (): { log: pino.Logger; lines: Line[] } => {
  const lines: Line[] = [];
  return { log: pino({ level: "debug" }, { write: (l: string) => void lines.push(JSON.parse(l) as Line) }), lines };
};

describe("callback deliveries given up, logged", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a dead receiver under 20 devices: one line at once, then one with the counts per callback, not a line per delivery", { timeout: 30_000 }, async () => {
    const { store, dispose } = await sqliteStore.open();
    const receiver = await startReceiver();
    receiver.status = 503;
    const { log, lines } = capture();
    // No retries: each delivery is given up at its first failure.
    const d = new CallbackDispatcher(store, log, { retryDelaysMs: [] });
    try {
      const user = (await store.users.create("givenup", null, 1)).id;
      const events: CommittedEvent[] = [];
      const devices: number[] = [];
      for (let i = 0; i < 20; i++) {
        const node = `GIVENUP${String(i).padStart(6, "0")}`;
        const [first] = await store.events.commit([dataEvent(user, node, 9, "19", Date.now() - 1)]);
        const deviceId = first?.deviceId as number;
        devices.push(deviceId);
        await store.callbacks.set({ device_id: deviceId, url: `${receiver.url}/cb/${i}`, secret: "s", created: 1 });
        // The first device five readings, the others one each: 24 deliveries.
        for (let k = 0; k < (i === 0 ? 5 : 1); k++) {
          const e = dataEvent(user, node, 9, String(20 + k), Date.now());
          const [r] = await store.events.commit([e]);
          expect(r?.outboxed).toBe(true);
          events.push({ ...e, deviceId, created: false, outboxed: true });
        }
      }
      d.start();
      d.onCommitted(events);
      await waitFor("every delivery given up", () => d.stats.failed === 24, 20_000);
      expect(d.drops.gave_up).toBe(24);
      const givenUp = (): Line[] => lines.filter((l) => /^callback deliver(y|ies) given up/.test(l.msg));
      // Before: 24 lines, one per delivery. Now the first, with its detail.
      expect(givenUp()).toEqual([expect.objectContaining({ level: 40, msg: "callback delivery given up", attempts: 1, why: "HTTP 503", url: expect.stringContaining(`${receiver.url}/cb/`) })]);

      // The stop logs the other 23, per callback, those with the most first.
      await d.stop();
      expect(givenUp()).toHaveLength(2);
      const summary = givenUp()[1] as Line;
      const byCallback = summary.byCallback as { deviceId: number; url: string; givenUp: number; why: string }[];
      expect(summary).toMatchObject({ level: 40, msg: "callback deliveries given up since the last line", givenUp: 23 });
      expect(summary.callbacks).toBeOneOf([19, 20]);
      expect(summary.callbacksNotListed).toBe((summary.callbacks as number) - MOST_LISTED);
      expect(byCallback).toHaveLength(MOST_LISTED);
      expect(byCallback[0]).toEqual({ deviceId: devices[0], url: `${receiver.url}/cb/0`, givenUp: expect.toBeOneOf([4, 5]), why: "HTTP 503" });
      for (const c of byCallback.slice(1)) expect(c).toMatchObject({ givenUp: 1, why: "HTTP 503" });
    } finally {
      // A second stop() waits for the first (it threw ClientDestroyedError from the closed pool).
      await d.stop();
      await receiver.close();
      await dispose();
    }
  });

  it("stop() twice, at once or one after the other, stops once and throws nothing", async () => {
    const { store, dispose } = await sqliteStore.open();
    const { log } = capture();
    try {
      const d = new CallbackDispatcher(store, log, { retryDelaysMs: [] });
      d.start();
      await Promise.all([d.stop(), d.stop()]);
      await d.stop();
    } finally {
      await dispose();
    }
  });

  it("at most one line a minute while give-ups go on, with the count since the last line; a new run of them is logged at once", () => {
    vi.useFakeTimers();
    const { log, lines } = capture();
    const g = new GivenUpLog(log, { first: "callback delivery given up", summary: "callback deliveries given up since the last line" });
    const T = Date.now();
    /** A give-up at T + ms (the fake clock moved there, its timers run on the way). */
    const at = (ms: number, deviceId: number): void => {
      vi.advanceTimersByTime(T + ms - Date.now());
      g.gaveUp({ deviceId, url: `http://receiver.test/${deviceId}`, attempts: 7, why: "HTTP 500" });
    };
    at(0, 1);
    expect(lines).toEqual([expect.objectContaining({ msg: "callback delivery given up", deviceId: 1, attempts: 7, why: "HTTP 500" })]);
    at(1000, 1);
    at(20_000, 2);
    at(30_000, 1);
    expect(lines).toHaveLength(1);
    vi.advanceTimersByTime(59_999 - 30_000);
    expect(lines).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({
      msg: "callback deliveries given up since the last line",
      givenUp: 3,
      callbacks: 2,
      sinceLastLineMs: 60_000,
      byCallback: [
        { deviceId: 1, url: "http://receiver.test/1", givenUp: 2, why: "HTTP 500" },
        { deviceId: 2, url: "http://receiver.test/2", givenUp: 1, why: "HTTP 500" },
      ],
    });
    expect(lines[1]).not.toHaveProperty("callbacksNotListed");
    // Within a minute of that line: counted, logged a minute after it.
    at(61_000, 3);
    expect(lines).toHaveLength(2);
    vi.advanceTimersByTime(59_000);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ givenUp: 1, callbacks: 1, sinceLastLineMs: 60_000, byCallback: [{ deviceId: 3, givenUp: 1 }] });
    // Nothing for more than a minute: the next one is logged at once, with its detail.
    vi.advanceTimersByTime(120_000);
    expect(lines).toHaveLength(3);
    at(300_000, 4);
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatchObject({ msg: "callback delivery given up", deviceId: 4, url: "http://receiver.test/4" });
    // stop() with nothing counted logs nothing, and leaves no timer.
    g.stop();
    expect(lines).toHaveLength(4);
    expect(vi.getTimerCount()).toBe(0);
  });
});
