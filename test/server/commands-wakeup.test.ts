/**
 * A wake-up that arrives while a held poll is reading its queue is not lost. On PostgreSQL (and
 * across instances) the read is a query in flight: a command committed after that query's snapshot
 * and announced on the Bus before the query's answer came back used to be ignored (the poll was
 * "checking"), so the block got it only at its next poll, a hold later. The read is made slow here
 * by holding the store's answer until the command is queued and announced.
 */
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalBus } from "../../server/bus/local.js";
import { COMMANDS_CHANNEL, CommandHub } from "../../server/services/commands.js";
import type { CommandRow, Store } from "../../server/store/types.js";
import { STORES } from "../helpers/stores.js";

const NODE = "WAKEUP000001";

describe.each(STORES)("a command queued while a held poll reads its queue ($name)", (impl) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let bus: LocalBus;
  let hub: CommandHub;
  beforeEach(async () => {
    ({ store, dispose } = await impl.open());
    bus = new LocalBus();
    hub = new CommandHub(store, bus, pino({ level: "silent" }), { holdMs: 60_000, ttlMs: 60_000 });
    hub.start();
  });
  afterEach(async () => {
    hub.stop();
    await bus.close();
    await dispose();
  });

  it("wakes the poll: the queue is read again once the read in flight ends", async () => {
    const real = store.commands.pending.bind(store.commands);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let reads = 0;
    let readEmpty: () => void = () => undefined;
    const firstRead = new Promise<void>((r) => (readEmpty = r));
    // The first read has its answer (an empty queue) before the command is queued, and hands it
    // back only when released. On PostgreSQL the query goes through a pool, so the command must not
    // be queued before that answer exists, or the first read may already see it.
    store.commands.pending = async (nodeId, now) => {
      const n = ++reads;
      const rows = await real(nodeId, now);
      if (n === 1) {
        readEmpty();
        await gate;
      }
      return rows;
    };
    const answered = hub.poll(NODE, () => undefined);
    expect(hub.heldPolls).toBe(1);
    await firstRead;
    // Another instance queues a command and announces it while the first read is in flight.
    const now = Date.now();
    await store.commands.add({ node_id: NODE, guid: `${NODE}_0_0_1002`, g: "0", v: 0, d: 1002, da: "1", created: now, expires: now + 60_000 });
    bus.publish(COMMANDS_CHANNEL, NODE);
    release();
    const rows = await Promise.race([answered, new Promise<CommandRow[]>((_r, reject) => setTimeout(() => reject(new Error("the wake-up was lost")), 5_000))]);
    expect(rows.map((r) => r.da)).toEqual(["1"]);
    expect(reads).toBe(2);
  });
});
