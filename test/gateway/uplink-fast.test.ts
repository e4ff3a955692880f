/**
 * The uplink's steady state runs by callbacks while its loop stays parked (gateway/agent/uplink.ts):
 * the requests on the wire must be the loop's (batching, order, window waits, backlogs handed over,
 * retries after a failure, stop during a wait).
 */
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { Backoff } from "../../gateway/agent/backoff.js";
import { MemoryOutbox } from "../../gateway/agent/memory.js";
import { Uplink } from "../../gateway/agent/uplink.js";
import type { NewOutboxEntry } from "../../gateway/agent/types.js";
import { FleetSendWindow } from "../../simulator/fleet/send-window.js";
import { type BlockClient, BlockClientError, type WireReading } from "../../protocol/block-client.js";

interface Call {
  kind: "data" | "heartbeat" | "config";
  das: string[];
}

/** A BlockClient that records each call; `fail` makes the next calls fail as a dead network would. */
function fakeClient(): { client: BlockClient; calls: Call[]; fail: { n: number; status: number } } {
  const calls: Call[] = [];
  const fail = { n: 0, status: 0 };
  const answer = (call: Call): Promise<void> => {
    calls.push(call);
    if (fail.n > 0) {
      fail.n--;
      return Promise.reject(new BlockClientError(fail.status === 0 ? "connect ECONNREFUSED" : `answered ${fail.status}`, fail.status));
    }
    return new Promise((r) => setImmediate(r));
  };
  const client = {
    data: (_t: string, r: WireReading) => answer({ kind: "data", das: [r.DA] }),
    heartbeat: (_t: string, rs: WireReading[]) => answer({ kind: "heartbeat", das: rs.map((r) => r.DA) }),
    config: (_t: string, e: { type: string }) => answer({ kind: "config", das: [e.type] }),
  } as unknown as BlockClient;
  return { client, calls, fail };
}

const entry = (DA: string, kind: "data" | "config" = "data"): NewOutboxEntry => ({ kind, G: "1", V: 0, D: 9, DA, value: null, ts: Date.now(), key: `k.${DA}` });

async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

describe("the uplink's steady state", () => {
  const uplinks: Uplink[] = [];
  afterEach(async () => {
    for (const u of uplinks.splice(0)) await u.stop();
  });

  function make(o: { window?: FleetSendWindow; batchSize?: number; pipeline?: number } = {}) {
    const { client, calls, fail } = fakeClient();
    const outbox = new MemoryOutbox();
    const acked: number[] = [];
    const reach: boolean[] = [];
    const rejected: string[] = [];
    const u = new Uplink(client, outbox, {
      token: () => "t",
      acked: (n) => acked.push(n),
      rejected: (e) => rejected.push(e.DA),
      unauthorized: () => {},
      reachable: (up) => reach.push(up),
    }, pino({ level: "silent" }), { ...o, backoff: new Backoff({ baseMs: 1, maxMs: 2 }) });
    uplinks.push(u);
    u.start();
    const submit = (...es: NewOutboxEntry[]): void => {
      outbox.append(es);
      u.notify();
    };
    return { u, calls, fail, outbox, acked, reach, rejected, submit };
  }

  it("sends a lone reading as data, readings of one turn as one heartbeat, a config event alone and first", async () => {
    const t = make();
    t.submit(entry("1"));
    await until("the first reading is acknowledged", () => t.acked.length === 1);
    t.submit(entry("PLUGIN", "config"), entry("2"));
    t.submit(entry("3"));
    await until("all acknowledged", () => t.outbox.rows === 0 && t.acked.length === 3);
    expect(t.calls).toEqual([
      { kind: "data", das: ["1"] },
      { kind: "config", das: ["PLUGIN"] },
      { kind: "heartbeat", das: ["2", "3"] },
    ]);
  });

  it("behind a full window hands a backlog of a whole pipeline to the loop with the slot it waited for", async () => {
    const window = new FleetSendWindow(1);
    const t = make({ window, batchSize: 2, pipeline: 2 });
    expect(window.tryTake()).toBe(true); // another block holds the only slot
    t.submit(entry("0"));
    await until("the uplink waits for the window", () => window.waiting === 1);
    t.submit(entry("1"), entry("2"), entry("3"), entry("4"), entry("5"));
    window.give();
    await until("all acknowledged", () => t.outbox.rows === 0);
    expect(t.calls.map((c) => c.das)).toEqual([["0", "1"], ["2", "3"], ["4", "5"]]);
    await until("the slot is given back", () => window.busy === 0);
    // The loop parks again, and the next reading takes the fast path with a free slot.
    t.submit(entry("6"));
    await until("acknowledged", () => t.outbox.rows === 0);
    expect(t.calls.at(-1)).toEqual({ kind: "data", das: ["6"] });
    expect(window.busy).toBe(0);
  });

  it("backs off after a failure and sends the same reading again, once acknowledged", async () => {
    const t = make();
    t.fail.n = 2;
    t.submit(entry("1"));
    await until("acknowledged", () => t.outbox.rows === 0);
    expect(t.calls.map((c) => c.das)).toEqual([["1"], ["1"], ["1"]]);
    expect(t.acked).toEqual([1]);
    expect(t.reach).toEqual([false, false, true]);
  });

  it("drops a lone reading refused for good (400) and gives its window slot back, then sends the next", async () => {
    const window = new FleetSendWindow(1);
    const t = make({ window });
    t.fail.n = 1;
    t.fail.status = 400;
    t.submit(entry("bad"));
    await until("the refusal is handled", () => t.outbox.rows === 0);
    expect(t.rejected).toEqual(["bad"]);
    t.submit(entry("2"));
    await until("acknowledged", () => t.acked.length === 1);
    expect(t.calls.map((c) => c.das)).toEqual([["bad"], ["2"]]);
    await until("the slot is given back", () => window.busy === 0);
  });

  it("stops while it waits for a window slot without taking one", async () => {
    const window = new FleetSendWindow(1);
    const t = make({ window });
    expect(window.tryTake()).toBe(true);
    t.submit(entry("1"));
    await until("the uplink waits for the window", () => window.waiting === 1);
    await t.u.stop();
    expect(window.waiting).toBe(0);
    window.give();
    expect(window.busy).toBe(0);
    expect(t.calls).toEqual([]);
  });
});
