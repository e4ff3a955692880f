/**
 * A command handed to a poll is not handed to the block's next poll while its answer is on its way
 * and its removal from the queue has not committed: a block polls again as soon as an answer
 * arrives, and used to get the same command twice (measured across instances on PostgreSQL: 21 of
 * 50 polls). It is handed out again only when its answer was lost or its removal failed, so nothing
 * acknowledged is lost either way. The store's removal is held here until the test releases it.
 */
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalBus } from "../../server/bus/local.js";
import { CommandHub } from "../../server/services/commands.js";
import type { CommandRow, Store } from "../../server/store/types.js";
import { STORES } from "../helpers/stores.js";

const NODE = "HANDEDOUT001";

/** rows of the promise, or a rejection naming what did not happen within 5 s. */
function within<T>(p: Promise<T>, what: string): Promise<T> {
  return Promise.race([p, new Promise<T>((_r, reject) => setTimeout(() => reject(new Error(`${what} within 5 s`)), 5_000))]);
}

describe.each(STORES)("a command handed to a poll ($name)", (impl) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let bus: LocalBus;
  let hub: CommandHub;
  beforeEach(async () => {
    ({ store, dispose } = await impl.open());
    bus = new LocalBus();
    hub = new CommandHub(store, bus, pino({ level: "silent" }), { holdMs: 60_000, ttlMs: 60_000 });
    hub.start();
    const now = Date.now();
    await store.commands.add({ node_id: NODE, guid: `${NODE}_0_0_1002`, g: "0", v: 0, d: 1002, da: "1", created: now, expires: now + 60_000 });
  });
  afterEach(async () => {
    hub.stop();
    await bus.close();
    await dispose();
  });

  const noop = (): void => undefined;

  it("is not handed to the next poll while its removal is in flight, and is gone after it", async () => {
    const real = store.commands.remove.bind(store.commands);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    store.commands.remove = async (ids) => {
      await gate;
      return real(ids);
    };
    const first = await hub.poll(NODE, noop);
    expect(first.map((r) => r.da)).toEqual(["1"]);
    const removal = hub.delivered(first);
    // The block's next poll, before the removal commits: an answer at once, with nothing in it.
    expect(await within(hub.poll(NODE, noop, 0), "the second poll's answer")).toEqual([]);
    release();
    await removal;
    expect(await hub.poll(NODE, noop, 0)).toEqual([]);
    expect(await store.commands.pending(NODE, Date.now())).toEqual([]);
  });

  it("is handed to a poll held meanwhile when its answer was lost", async () => {
    const first = await hub.poll(NODE, noop);
    const real = store.commands.pending.bind(store.commands);
    let readDone: () => void = () => undefined;
    const read = new Promise<void>((r) => (readDone = r));
    store.commands.pending = async (nodeId, now) => {
      const rows = await real(nodeId, now);
      readDone();
      return rows;
    };
    let second: CommandRow[] | null = null;
    const held = hub.poll(NODE, noop).then((rows) => (second = rows));
    // The held poll read the queue, which still holds the command, and left it out: it waits.
    await within(read, "the held poll's read");
    await Promise.resolve();
    expect(second).toBeNull();
    expect(hub.heldPolls).toBe(1);
    hub.lost(first);
    expect((await within(held, "the lost command handed to the held poll")).map((r) => r.da)).toEqual(["1"]);
  });

  it("is handed out again when its removal failed", async () => {
    store.commands.remove = () => Promise.reject(new Error("disk full"));
    const first = await hub.poll(NODE, noop);
    await expect(hub.delivered(first)).rejects.toThrow("disk full");
    expect((await hub.poll(NODE, noop, 0)).map((r) => r.da)).toEqual(["1"]);
  });
});
