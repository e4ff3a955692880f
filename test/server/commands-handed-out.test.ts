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
import type { CommandRow, DeviceRow, Store } from "../../server/store/types.js";
import { STORES } from "../helpers/stores.js";
import { waitFor } from "../helpers/wait.js";

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
  const device: DeviceRow = {
    id: 1,
    guid: `${NODE}_0_0_1002`,
    user_id: 1,
    node_id: NODE,
    g: "0",
    v: 0,
    d: 1002,
    short_name: null,
    is_silent: false,
    meta: {},
    last_da: null,
    last_ts: null,
    created: 0,
  };

  /** Counts the store's reads of the queue (each held poll's look at it). */
  function countReads(): { readonly n: number } {
    const real = store.commands.pending.bind(store.commands);
    const reads = { n: 0 };
    store.commands.pending = async (nodeId, now) => {
      const rows = await real(nodeId, now);
      reads.n++;
      return rows;
    };
    return reads;
  }

  /** The store's removal waits for the returned release(). */
  function holdRemovals(): () => void {
    const real = store.commands.remove.bind(store.commands);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    store.commands.remove = async (ids) => {
      await gate;
      return real(ids);
    };
    return release;
  }

  it("keeps a newer command behind it (never handed over directly) while it is on its way; lost, the two go out in order", async () => {
    const first = await hub.poll(NODE, noop);
    const reads = countReads();
    let second: CommandRow[] | null = null;
    const held = hub.poll(NODE, noop).then((rows) => (second = rows));
    // Held, and done reading the queue: a waiter that saw nothing it may hand out.
    await waitFor("the second poll's read", () => reads.n === 1, 5_000);
    await Promise.resolve();
    expect(hub.heldPolls).toBe(1);
    // A user's command while the first is on its way: queued behind it, not handed to the held poll.
    await within(hub.send(device, "2"), "the send");
    expect((await store.commands.pending(NODE, Date.now())).map((r) => r.da)).toEqual(["1", "2"]);
    expect(second).toBeNull();
    hub.lost(first);
    expect((await within(held, "the held poll's answer")).map((r) => r.da)).toEqual(["1", "2"]);
  });

  it("hands a command queued behind it to the poll held meanwhile once its removal commits", async () => {
    const release = holdRemovals();
    const first = await hub.poll(NODE, noop);
    const removal = hub.delivered(first);
    const reads = countReads();
    let second: CommandRow[] | null = null;
    const held = hub.poll(NODE, noop).then((rows) => (second = rows));
    await waitFor("the held poll's first read", () => reads.n === 1, 5_000);
    await within(hub.send(device, "2"), "the send");
    // The send woke the held poll: it read the queue again and still waits for the older command's fate.
    await waitFor("the held poll's read after the send", () => reads.n === 2, 5_000);
    await Promise.resolve();
    expect(second).toBeNull();
    release();
    await removal;
    expect((await within(held, "the held poll's answer")).map((r) => r.da)).toEqual(["2"]);
  });

  it("is not handed to the next poll while its removal is in flight, and is gone after it", async () => {
    const release = holdRemovals();
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
