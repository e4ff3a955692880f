import { afterEach, describe, expect, it, vi } from "vitest";
import { BlockAgent } from "../../gateway/agent/agent.js";
import { MemoryOutbox, MemoryTokenStore } from "../../gateway/agent/memory.js";
import { FleetSendWindow } from "../../simulator/fleet/send-window.js";
import { ADMIN_TOKEN, type LiveServer, startLive } from "../helpers/live.js";
import { waitFor } from "../helpers/wait.js";

describe("fleet send window", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("hands out at most `size` slots and gives freed ones to the waiters in order", async () => {
    const w = new FleetSendWindow(2);
    const signal = new AbortController().signal;
    expect(w.tryTake()).toBe(true);
    expect(await w.take(signal)).toBe(true);
    expect(w.tryTake()).toBe(false);
    const order: number[] = [];
    const a = w.take(signal).then((took) => order.push(took ? 1 : -1));
    const b = w.take(signal).then((took) => order.push(took ? 2 : -2));
    expect(w.waiting).toBe(2);
    w.give();
    await a;
    expect(order).toEqual([1]);
    expect(w.busy).toBe(2);
    w.give();
    await b;
    expect(order).toEqual([1, 2]);
    w.give();
    w.give();
    expect(w.busy).toBe(0);
    expect(w.waiting).toBe(0);
  });

  it("lets an aborted waiter go without a slot, and skips it when a slot frees", async () => {
    const w = new FleetSendWindow(1);
    expect(w.tryTake()).toBe(true);
    const gone = new AbortController();
    const stays = new AbortController();
    const first = w.take(gone.signal);
    const second = w.take(stays.signal);
    gone.abort();
    expect(await first).toBe(false);
    expect(w.waiting).toBe(1);
    w.give();
    expect(await second).toBe(true);
    expect(w.busy).toBe(1);
    expect(await w.take(gone.signal)).toBe(false);
    // A served waiter whose signal aborts later keeps its slot, and the counts stay right.
    w.give();
    const later = new AbortController();
    expect(await w.take(later.signal)).toBe(true);
    const next = w.take(later.signal);
    w.give();
    expect(await next).toBe(true);
    later.abort();
    expect(w.waiting).toBe(0);
    expect(w.busy).toBe(1);
  });

  it("serves one signal's successive waits in turn, and lets the last go when the signal aborts", async () => {
    const w = new FleetSendWindow(1);
    const other = new AbortController();
    const mine = new AbortController();
    expect(w.tryTake()).toBe(true);
    for (let i = 0; i < 3; i++) {
      // Each round: mine waits behind another signal's wait, and is served after it.
      const theirs = w.take(other.signal);
      const wait = w.take(mine.signal);
      w.give();
      expect(await theirs).toBe(true);
      w.give();
      expect(await wait).toBe(true);
    }
    const last = w.take(mine.signal);
    expect(w.waiting).toBe(1);
    mine.abort();
    expect(await last).toBe(false);
    expect(w.waiting).toBe(0);
    w.give();
    expect(w.busy).toBe(0);
  });

  it("keeps its queue bounded while it is never empty", async () => {
    const w = new FleetSendWindow(1);
    const signal = new AbortController().signal;
    expect(w.tryTake()).toBe(true);
    let pending = w.take(signal);
    for (let i = 0; i < 5000; i++) {
      const next = w.take(signal);
      w.give();
      expect(await pending).toBe(true);
      pending = next;
    }
    expect(w.waiting).toBe(1);
    expect((w as unknown as { waiters: unknown[] }).waiters.length).toBeLessThan(2100);
  });

  it("accounts for how full it was and how long each request held its slot", () => {
    // The window times itself with performance.now(): a fake clock, so a loaded machine's late
    // timers change nothing.
    vi.useFakeTimers({ toFake: ["performance"] });
    const w = new FleetSendWindow(2);
    w.resetStats();
    expect(w.tryTake()).toBe(true);
    expect(w.tryTake()).toBe(true);
    vi.advanceTimersByTime(40);
    w.give();
    w.give();
    const s = w.summary();
    expect(s.size).toBe(2);
    expect(s.cycles).toBe(2);
    expect(s.full_percent).toBe(100);
    expect(s.cycle_ms).toBe(40);
    expect(s.mean_in_flight).toBe(2);
    expect(s.exchange_ms).toBe(s.cycle_ms);
    // Two slots over one connection: half of each slot's time was spent waiting for it.
    const pooled = new FleetSendWindow(2, 1);
    expect(pooled.tryTake() && pooled.tryTake()).toBe(true);
    vi.advanceTimersByTime(40);
    pooled.give();
    pooled.give();
    const p = pooled.summary();
    expect(p.exchange_ms as number).toBeCloseTo((p.cycle_ms as number) / p.mean_in_flight, 0);
    w.resetStats();
    expect(w.summary()).toMatchObject({ cycles: 0, cycle_ms: null, exchange_ms: null, full_percent: 0 });
  });

  it("refuses a size below 1", () => {
    expect(() => new FleetSendWindow(0)).toThrow(/size of at least 1/);
  });
});

describe("an uplink behind a full send window", () => {
  let srv: LiveServer;
  const agents: BlockAgent[] = [];
  afterEach(async () => {
    for (const a of agents.splice(0)) await a.stop();
    await srv.close();
  });

  it("waits for a slot, then sends everything that arrived meanwhile in one batch", async () => {
    srv = await startLive();
    const window = new FleetSendWindow(1);
    const a = new BlockAgent({
      nodeId: "WINDOWTEST0001",
      baseUrl: srv.baseUrl,
      outbox: new MemoryOutbox(),
      tokens: new MemoryTokenStore(),
      userToken: ADMIN_TOKEN,
      uplink: { window },
    });
    agents.push(a);
    const activated = new Promise((r) => a.once("activated", r));
    await a.start();
    await activated;
    // Another block holds the only slot while these readings arrive.
    expect(window.tryTake()).toBe(true);
    const acks: number[] = [];
    a.on("acked", (n: number) => acks.push(n));
    a.submit({ G: "1", V: 0, D: 9, DA: "0" });
    await waitFor("the uplink waits for the window", () => window.waiting === 1);
    for (let i = 1; i < 30; i++) a.submit({ G: "1", V: 0, D: 9, DA: String(i) });
    window.give();
    await waitFor("30 readings acknowledged", () => a.stats().acked === 30);
    expect(acks).toEqual([30]);
    const points = await srv.history("WINDOWTEST0001_1_0_9");
    expect(points.map((p) => p.v).sort((x, y) => Number(x) - Number(y))).toEqual(Array.from({ length: 30 }, (_, i) => i));
    await waitFor("the slot is given back", () => window.busy === 0);
  });
});
