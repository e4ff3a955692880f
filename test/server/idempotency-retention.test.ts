/**
 * Idempotency key retention (`--idempotency-retention`), on every store through the ingest service:
 * keys first seen more than the retention ago are pruned (that reading, sent again, is stored
 * again), newer ones still answer duplicates; a retention under the 1 h minimum is refused.
 */
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Ingest, MIN_KEY_RETENTION_MS } from "../../server/services/ingest.js";
import type { Store } from "../../server/store/types.js";
import { dataEvent } from "../helpers/events.js";
import { STORES } from "../helpers/stores.js";

const NODE = "RETENTIONNODE01";
const HOUR = 3_600_000;

describe.each(STORES)("idempotency key retention: $name", (impl) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let userId: number;
  let ingest: Ingest;
  let now = 0;
  beforeEach(async () => {
    ({ store, dispose } = await impl.open());
    userId = (await store.users.create("alice", "hash", 1)).id;
    ingest = new Ingest(store, pino({ level: "silent" }), { keyRetentionMs: 2 * HOUR, clock: () => now });
  });
  afterEach(async () => {
    await ingest.stop();
    await dispose();
  });

  const send = async (key: string): Promise<boolean> => {
    const [r] = await ingest.submit([dataEvent(NODE, userId, "0", "1", { key })]);
    return r?.duplicate ?? false;
  };

  it("prunes the keys older than the retention; newer ones still answer duplicates", async () => {
    expect(await send("old")).toBe(false);
    const oldSeen = Date.now(); // the store stamped "old" at or before this
    // "new" is first seen a millisecond later at least: waits on the clock, at most 1 ms.
    while (Date.now() <= oldSeen) await new Promise((r) => setImmediate(r));
    expect(await send("new")).toBe(false);

    // Within the retention nothing goes.
    now = Date.now();
    expect(await ingest.pruneKeys()).toBe(0);
    expect(await send("old")).toBe(true);

    // The retention after "old" was seen but not after "new": only "old" is forgotten.
    now = oldSeen + 1 + 2 * HOUR;
    expect(await ingest.pruneKeys()).toBe(1);
    expect(await send("old")).toBe(false); // stored again: its key was forgotten
    expect(await send("new")).toBe(true);
    expect(await send("old")).toBe(true); // and remembered from its second sight
    const guid = `${NODE}_0_0_9`;
    const device = await store.devices.byGuid(guid);
    expect(await store.history.count(device?.id ?? -1, 0, Date.now() + 1)).toBe(3);
  });

  it("refuses a retention under the minimum", () => {
    expect(() => new Ingest(store, pino({ level: "silent" }), { keyRetentionMs: MIN_KEY_RETENTION_MS - 1 })).toThrow(/under the 1 h minimum/);
    expect(() => new Ingest(store, pino({ level: "silent" }), { keyRetentionMs: Number.NaN })).toThrow(/under the 1 h minimum/);
  });
});
