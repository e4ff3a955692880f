/**
 * The log of a callback outbox over its bounds (server/services/automation/over-bounds-log.ts), on
 * each real store: the feeder trims every 0.2 s under an overload, and logs a warning when drops
 * begin, then at most one a minute with the count dropped since the line before, and an info line
 * once a trim has dropped nothing for 10 s. The feeder's clock is the test's; its logger captured.
 */
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OutboxFeeder } from "../../../server/services/automation/callback-outbox.js";
import type { Store } from "../../../server/store/types.js";
import { dataEvent } from "../../helpers/events.js";
import { STORES } from "../../helpers/stores.js";

const NODE = "OVERBOUNDS0001";

interface Line {
  level: number;
  msg: string;
  [k: string]: unknown;
}

describe.each(STORES)("callback outbox over its bounds, logged on $name", (impl) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let feeder: OutboxFeeder;
  let userId: number;
  let now = 0;
  let seq = 0;
  let cycled: (() => void) | null = null;
  const lines: Line[] = [];
  const dropped: number[] = [];

  beforeEach(async () => {
    ({ store, dispose } = await impl.open());
    userId = (await store.users.create("alice", "hash", 1)).id;
    const [first] = await store.events.commit([dataEvent(NODE, userId, "0", "0")]);
    await store.callbacks.set({ device_id: first?.deviceId as number, url: "http://receiver.test/cb", secret: "s", created: 1 });
    lines.length = 0;
    dropped.length = 0;
    const log = pino({ level: "debug" }, { write: (l: string) => void lines.push(JSON.parse(l) as Line) });
    feeder = new OutboxFeeder(
      store.outbox,
      {
        busy: () => [],
        held: () => [],
        // Nothing is leased here: the outbox only fills and is trimmed.
        room: () => 0,
        // More waiting than the bounds allow: a trim is due every 0.2 s, as under an overload.
        waiting: () => 1_000_000,
        take: () => undefined,
        trimmed: (n) => void dropped.push(n.device + n.user + n.total),
        counted: () => undefined,
        cycled: () => cycled?.(),
      },
      log,
      { leaseMs: 10_000, perUser: 8, bounds: { perDevice: 2, perUser: 100, total: 1000 }, clock: () => now },
    );
  });
  afterEach(async () => {
    await feeder.stop();
    await dispose();
  });

  /** `n` more readings of the device with a callback: `n` more deliveries in the outbox. */
  const readings = async (n: number): Promise<void> => {
    await store.events.commit(Array.from({ length: n }, () => dataEvent(NODE, userId, "0", String(++seq))));
  };
  /** One feeder cycle (its trim) at `t`. */
  const cycleAt = async (t: number): Promise<void> => {
    now = t;
    const done = new Promise<void>((r) => {
      cycled = r;
    });
    feeder.wake();
    await done;
    cycled = null;
  };
  const outboxLines = (): Line[] => lines.filter((l) => l.msg.startsWith("callback outbox"));

  it("a warning when drops begin, at most one a minute with the count since the last, an info line when it ends", { timeout: 30_000 }, async () => {
    const T = Date.now();
    await readings(5);
    await cycleAt(T);
    expect(dropped).toEqual([3]);
    expect(outboxLines()).toEqual([expect.objectContaining({ level: 40, device: 3, user: 0, total: 0, msg: expect.stringMatching(/^callback outbox over its bounds: newest deliveries dropped/) })]);

    // Twenty trims 0.2 s apart that each drop a delivery: no more lines within the minute.
    for (let i = 1; i <= 20; i++) {
      await readings(1);
      await cycleAt(T + i * 200);
    }
    expect(dropped).toHaveLength(21);
    expect(outboxLines()).toHaveLength(1);

    // A minute after the first line: one warning with what was dropped since (20 + 2).
    await readings(2);
    await cycleAt(T + 60_000);
    expect(outboxLines()).toHaveLength(2);
    expect(outboxLines()[1]).toMatchObject({ level: 40, device: 22, user: 0, total: 0, sinceLastLineMs: 60_000, droppedInAll: 25, overForMs: 60_000, msg: expect.stringMatching(/^callback outbox still over its bounds/) });

    // One more drop, then trims that drop nothing: a lull under 10 s is not the end; then it is.
    await readings(1);
    await cycleAt(T + 61_000);
    await cycleAt(T + 63_000);
    await cycleAt(T + 70_000);
    expect(outboxLines()).toHaveLength(2);
    await cycleAt(T + 71_000);
    expect(outboxLines()).toHaveLength(3);
    expect(outboxLines()[2]).toMatchObject({ level: 30, device: 1, droppedInAll: 26, overForMs: 61_000, msg: expect.stringMatching(/^callback outbox back within its bounds/) });
    await cycleAt(T + 73_000);
    expect(outboxLines()).toHaveLength(3);
    expect(await store.outbox.depth()).toBe(2);

    // A new overload is announced again.
    await readings(1);
    await cycleAt(T + 75_000);
    expect(outboxLines()).toHaveLength(4);
    expect(outboxLines()[3]).toMatchObject({ level: 40, device: 1, msg: expect.stringMatching(/^callback outbox over its bounds/) });
  });
});
