/**
 * The simulator's lean path (BlockAgent's `lean` option, Uplink.canLean/sendLean): a lone reading
 * that the uplink would send alone at once is sent without an outbox entry, and its answer only
 * counted. Anything else must behave as the stored path: a failure stores the reading first in
 * line and retries it, a refusal drops it, a stop keeps it, a busy uplink stores it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { BlockAgent } from "../../gateway/agent/agent.js";
import { MemoryOutbox, MemoryTokenStore } from "../../gateway/agent/memory.js";
import type { OutboxEntry } from "../../gateway/agent/types.js";
import { FleetSendWindow } from "../../simulator/fleet/send-window.js";
import { type BlockClient, BlockClientError, type PostCallbacks, type WireReading } from "../../protocol/block-client.js";

interface Call {
  kind: "data" | "heartbeat";
  readings: WireReading[];
  answer(status?: number): void;
}

/** A BlockClient whose calls wait until the test answers them (200 by default, else that status; 0: network). */
function fakeClient(): { client: BlockClient; calls: Call[] } {
  const calls: Call[] = [];
  const call = (kind: Call["kind"], readings: WireReading[], signal?: AbortSignal): Promise<void> =>
    new Promise((resolve, reject) => {
      signal?.addEventListener("abort", () => reject(new BlockClientError("aborted", 0)), { once: true });
      calls.push({
        kind,
        readings,
        answer: (status = 200) => (status === 200 ? resolve() : reject(new BlockClientError(`answered ${status}`, status))),
      });
    });
  const client = {
    activate: () => Promise.resolve("block-token"),
    commands: (_t: string, signal?: AbortSignal) => new Promise((_ok, fail) => signal?.addEventListener("abort", () => fail(new Error("aborted")), { once: true })),
    data: (_t: string, r: WireReading, signal?: AbortSignal) => call("data", [r], signal),
    heartbeat: (_t: string, rs: WireReading[], signal?: AbortSignal) => call("heartbeat", rs, signal),
    // The lean path's calls, by callbacks as the real client's (never in the caller's turn).
    dataTo: (_t: string, r: WireReading, signal: AbortSignal | undefined, done: PostCallbacks) => {
      call("data", [r], signal).then(() => done.posted(), (err: unknown) => done.postFailed(err as BlockClientError));
    },
    heartbeatTo: (_t: string, rs: WireReading[], signal: AbortSignal | undefined, done: PostCallbacks) => {
      call("heartbeat", rs, signal).then(() => done.posted(), (err: unknown) => done.postFailed(err as BlockClientError));
    },
    config: () => Promise.resolve(),
  } as unknown as BlockClient;
  return { client, calls };
}

async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

const reading = (DA: string, G = "1") => ({ G, V: 0, D: 9, DA });

describe("the lean path", () => {
  const agents: BlockAgent[] = [];
  afterEach(async () => {
    for (const a of agents.splice(0)) await a.stop();
  });

  async function agent(window?: FleetSendWindow) {
    const { client, calls } = fakeClient();
    const stored: string[] = [];
    const outbox = new MemoryOutbox({}, (entries) => stored.push(...entries.map((e) => e.DA)));
    const leanAcked: number[] = [];
    const rejected: string[] = [];
    const a = new BlockAgent({
      nodeId: "LEANTEST0001",
      client,
      outbox,
      tokens: new MemoryTokenStore(),
      userToken: "u",
      backoff: { baseMs: 1, maxMs: 2 },
      uplink: window ? { window } : undefined,
      lean: { acked: (ts) => leanAcked.push(ts) },
    });
    a.on("rejected", (e: OutboxEntry) => rejected.push(e.DA));
    agents.push(a);
    const activated = new Promise((r) => a.once("activated", r));
    await a.start();
    await activated;
    const uplink = (a as unknown as { uplink: { parked: boolean; busy: boolean } }).uplink;
    await until("the uplink is parked", () => uplink.parked && !uplink.busy);
    return { a, calls, outbox, stored, leanAcked, rejected, uplink };
  }

  it("sends a lone reading in the caller's turn without storing it, with its KEY and time, and counts its answer", async () => {
    const window = new FleetSendWindow(4);
    const t = await agent(window);
    const before = Date.now();
    expect(t.a.submitLean(reading("20.5"))).toBe(true);
    // Sent at once (no microtask in between), and never in the outbox.
    expect(t.calls).toHaveLength(1);
    expect(t.outbox.rows).toBe(0);
    expect(window.busy).toBe(1);
    const sent = t.calls[0] as Call;
    expect(sent.kind).toBe("data");
    expect(sent.readings[0]).toMatchObject({ G: "1", V: 0, D: 9, DA: "20.5" });
    expect(sent.readings[0]?.KEY).toMatch(/^[\w-]+\.0$/);
    expect(sent.readings[0]?.TIMESTAMP).toBeGreaterThanOrEqual(before);
    sent.answer();
    await until("acknowledged", () => t.leanAcked.length === 1);
    expect(t.leanAcked[0]).toBe(sent.readings[0]?.TIMESTAMP);
    expect(t.stored).toEqual([]);
    expect(t.a.stats()).toMatchObject({ submitted: 1, acked: 1, outboxRows: 0 });
    await until("the slot is given back", () => window.busy === 0);
    // A heartbeat reading goes as a heartbeat of one; the next KEY follows.
    expect(t.a.submitLean({ ...reading("21"), kind: "heartbeat" })).toBe(true);
    expect(t.calls[1]?.kind).toBe("heartbeat");
    expect(t.calls[1]?.readings[0]?.KEY).toMatch(/\.1$/);
    t.calls[1]?.answer();
    await until("acknowledged", () => t.leanAcked.length === 2);
  });

  it("stores a reading while a request is in flight, and config events; sends them as the stored path does", async () => {
    const window = new FleetSendWindow(1);
    const t = await agent(window);
    expect(t.a.submitLean(reading("1"))).toBe(true);
    // In flight: the next one waits in the outbox, as it would behind the fast path's cycle.
    expect(t.a.submitLean(reading("2"))).toBe(true);
    expect(t.calls).toHaveLength(1);
    expect(t.outbox.rows).toBe(1);
    t.calls[0]?.answer();
    await until("the stored one is sent", () => t.calls.length === 2);
    expect(t.calls[1]?.readings.map((r) => r.DA)).toEqual(["2"]);
    t.calls[1]?.answer();
    await until("acknowledged through the outbox", () => t.stored.length === 1 && t.outbox.rows === 0);
    await until("the window is free and the uplink parked", () => window.busy === 0 && t.uplink.parked && !t.uplink.busy);
    expect(t.a.submitLean({ ...reading("PLUGIN"), kind: "config" })).toBe(true);
    expect(t.outbox.rows).toBe(1);
    await until("the config event is acknowledged", () => t.stored.length === 2);
    // An invalid reading is refused as submit() refuses it.
    expect(t.a.submitLean(reading("4", "bad port!"))).toBe(false);
    expect(t.leanAcked).toHaveLength(1);
  });

  it("behind a full window waits for a slot unstored; joins what was stored meanwhile in one batch; is stored at a stop", async () => {
    const window = new FleetSendWindow(1);
    const t = await agent(window);
    // Another block holds the only slot: the reading waits, not stored, and leaves alone with the slot.
    expect(window.tryTake()).toBe(true);
    expect(t.a.submitLean(reading("1"))).toBe(true);
    expect(t.outbox.rows).toBe(0);
    expect(window.waiting).toBe(1);
    window.give();
    await until("sent", () => t.calls.length === 1);
    expect(t.calls[0]?.kind).toBe("data");
    t.calls[0]?.answer();
    await until("acknowledged", () => t.leanAcked.length === 1);
    await until("the window is free and the uplink parked", () => window.busy === 0 && t.uplink.parked && !t.uplink.busy);
    // Readings stored during the wait: one batch, the waiting one first (by its KEY's order).
    expect(window.tryTake()).toBe(true);
    expect(t.a.submitLean(reading("2"))).toBe(true);
    expect(t.a.submitLean(reading("3"))).toBe(true);
    expect(t.outbox.rows).toBe(1);
    window.give();
    await until("sent", () => t.calls.length === 2);
    expect(t.calls[1]?.kind).toBe("heartbeat");
    expect(t.calls[1]?.readings.map((r) => r.DA)).toEqual(["2", "3"]);
    t.calls[1]?.answer();
    await until("acknowledged through the outbox", () => t.stored.length === 2 && t.outbox.rows === 0);
    await until("the window is free and the uplink parked", () => window.busy === 0 && t.uplink.parked && !t.uplink.busy);
    // A stop during the wait: stored, not lost, and no slot held.
    expect(window.tryTake()).toBe(true);
    expect(t.a.submitLean(reading("4"))).toBe(true);
    await t.a.stop();
    expect(t.outbox.peek(10).map((e) => e.DA)).toEqual(["4"]);
    expect(window.waiting).toBe(0);
    window.give();
    expect(window.busy).toBe(0);
    expect(t.calls).toHaveLength(2);
  });

  it("stores a failed reading first in line, backs off and sends it again with what came meanwhile", async () => {
    const t = await agent();
    expect(t.a.submitLean(reading("1"))).toBe(true);
    expect(t.a.submitLean(reading("2"))).toBe(true);
    const key = t.calls[0]?.readings[0]?.KEY;
    t.calls[0]?.answer(503);
    await until("sent again", () => t.calls.length === 2);
    // The failed reading first, with its KEY and time: the server stores it once.
    expect(t.calls[1]?.kind).toBe("heartbeat");
    expect(t.calls[1]?.readings.map((r) => r.DA)).toEqual(["1", "2"]);
    expect(t.calls[1]?.readings[0]?.KEY).toBe(key);
    t.calls[1]?.answer();
    await until("acknowledged through the outbox", () => t.stored.length === 2);
    expect(t.leanAcked).toEqual([]);
    expect(t.outbox.rows).toBe(0);
  });

  it("drops a reading refused for good (400), and keeps one in flight at a stop in the outbox", async () => {
    const t = await agent();
    expect(t.a.submitLean(reading("bad"))).toBe(true);
    t.calls[0]?.answer(400);
    await until("refused", () => t.rejected.length === 1);
    expect(t.rejected).toEqual(["bad"]);
    expect(t.outbox.rows).toBe(0);
    await until("the uplink is parked", () => t.uplink.parked && !t.uplink.busy);
    expect(t.a.submitLean(reading("kept"))).toBe(true);
    await t.a.stop();
    expect(t.outbox.peek(10).map((e) => e.DA)).toEqual(["kept"]);
  });

  it("is refused for a gateway's outbox that cannot restore entries, and off without the option", async () => {
    const { client, calls } = fakeClient();
    const durableLike = new MemoryOutbox();
    const { reserve: _r, restore: _s, ...plain } = Object.getOwnPropertyDescriptors(MemoryOutbox.prototype);
    const noRestore = Object.create(Object.getPrototypeOf(MemoryOutbox.prototype), plain) as object;
    Object.setPrototypeOf(durableLike, noRestore);
    expect(() => new BlockAgent({ nodeId: "LEANTEST0002", client, outbox: durableLike, tokens: new MemoryTokenStore(), lean: { acked: () => {} } })).toThrow(/restore/);
    // Without `lean`, submitLean stores as submit() does.
    const outbox = new MemoryOutbox();
    const a = new BlockAgent({ nodeId: "LEANTEST0003", client, outbox, tokens: new MemoryTokenStore("t") });
    agents.push(a);
    expect(a.submitLean(reading("1"))).toBe(true);
    expect(outbox.rows).toBe(1);
    expect(calls).toEqual([]);
  });
});
