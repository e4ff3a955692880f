import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fleetTransport } from "../../simulator/fleet/transport.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { SimBlockClient } from "../../simulator/fleet/client.js";
import { MeasuredOutbox, SimTokenStore } from "../../simulator/fleet/memory.js";
import { Scheduler } from "../../simulator/fleet/scheduler.js";

describe("fleet scheduler", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("runs jobs in due order with one timer, skips cancelled ones", async () => {
    vi.useFakeTimers();
    const s = new Scheduler();
    const ran: string[] = [];
    s.after(300, () => ran.push("c"));
    s.after(100, () => ran.push("a"));
    const b = s.after(200, () => ran.push("b"));
    s.after(100, () => ran.push("a2"));
    b.cancel();
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(150);
    expect(ran).toEqual(["a", "a2"]);
    await vi.advanceTimersByTimeAsync(200);
    expect(ran).toEqual(["a", "a2", "c"]);
    s.stop();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("with a quantum, fires on its multiples and runs every job due by then, in order", async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const s = new Scheduler(Date.now, 10);
    const ran: string[] = [];
    s.after(7, () => ran.push("b"));
    s.after(3, () => ran.push("a"));
    s.after(12, () => ran.push("c"));
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(9);
    expect(ran).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(ran).toEqual(["a", "b"]);
    await vi.advanceTimersByTimeAsync(9);
    expect(ran).toEqual(["a", "b"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(ran).toEqual(["a", "b", "c"]);
    expect(() => new Scheduler(Date.now, 0)).toThrow(/quantumMs must be a positive integer, got 0/);
    s.stop();
  });

  it("keeps the order of jobs beyond the wheel's horizon, and of many jobs in one millisecond", async () => {
    vi.useFakeTimers();
    const s = new Scheduler();
    const ran: string[] = [];
    for (const [delay, name] of [[9000, "f"], [10, "a"], [4097, "d"], [4095, "c"], [5000, "e"], [10, "a2"], [200, "b"]] as const) {
      s.after(delay, () => ran.push(name));
    }
    for (let i = 0; i < 500; i++) s.after(7000, () => ran.push(`x${i}`));
    expect(s.size).toBe(507);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(4096);
    expect(ran).toEqual(["a", "a2", "b", "c"]);
    await vi.advanceTimersByTimeAsync(6000);
    expect(ran.slice(0, 6)).toEqual(["a", "a2", "b", "c", "d", "e"]);
    expect(ran.slice(6, 506)).toEqual(Array.from({ length: 500 }, (_, i) => `x${i}`));
    expect(ran[506]).toBe("f");
    expect(s.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a job that schedules itself with no delay runs on a later turn, not in a loop", async () => {
    vi.useFakeTimers();
    const s = new Scheduler();
    let n = 0;
    const again = (): void => {
      n++;
      if (n < 1000) s.after(0, again);
    };
    s.after(0, again);
    await vi.advanceTimersByTimeAsync(0);
    expect(n).toBe(1);
    // Each round is a new timer (the fake clock moves at least 1 ms per timer).
    await vi.advanceTimersByTimeAsync(2000);
    expect(n).toBe(1000);
    s.stop();
  });

  it("schedules a job that ran again as the same object, in order; never one still pending", async () => {
    vi.useFakeTimers();
    const s = new Scheduler();
    const ran: string[] = [];
    const a = s.after(10, () => ran.push("a1"));
    // Still pending: a new job, and the first still runs.
    const b = s.after(20, () => ran.push("b1"), a);
    expect(b).not.toBe(a);
    await vi.advanceTimersByTimeAsync(10);
    expect(ran).toEqual(["a1"]);
    const a2 = s.after(5, () => ran.push("a2"), a);
    expect(a2).toBe(a);
    s.after(5, () => ran.push("c"));
    await vi.advanceTimersByTimeAsync(10);
    expect(ran).toEqual(["a1", "a2", "c", "b1"]);
    // A cancelled job is reused only once its millisecond has passed, and runs when scheduled again.
    const d = s.after(10, () => ran.push("never"));
    d.cancel();
    expect(s.after(1, () => ran.push("d1"), d)).not.toBe(d);
    await vi.advanceTimersByTimeAsync(20);
    expect(s.after(1, () => ran.push("d2"), d)).toBe(d);
    await vi.advanceTimersByTimeAsync(5);
    expect(ran).toEqual(["a1", "a2", "c", "b1", "d1", "d2"]);
    expect(s.size).toBe(0);
    s.stop();
  });
});

describe("measured outbox and token store", () => {
  it("acknowledges in order, times each entry from its submission and bounds its rows", () => {
    let now = 1000;
    const acked: [string, number][] = [];
    const ob = new MeasuredOutbox((entries, at) => entries.forEach((e) => acked.push([e.DA, at - e.ts])), 3, 10_000, () => now);
    const entry = (DA: string, ts: number) => ({ kind: "data" as const, G: "1", V: 0, D: 9, DA, value: null, ts, key: `k${DA}` });
    expect(ob.append([entry("a", 900), entry("b", 950)])).toBe(0);
    expect(ob.peek(10).map((e) => e.DA)).toEqual(["a", "b"]);
    now = 1010;
    ob.ack(ob.peek(1).map((e) => e.id));
    expect(acked).toEqual([["a", 110]]);
    expect(ob.append([entry("c", 1000), entry("d", 1000), entry("e", 1000)])).toBe(1);
    expect(ob.peek(10).map((e) => e.DA)).toEqual(["c", "d", "e"]);
    expect(ob.stats()).toMatchObject({ rows: 3, dropped: 1 });
    expect(ob.expire(11_500)).toBe(3);
    expect(ob.stats()).toMatchObject({ rows: 0, bytes: 0, dropped: 4 });
  });

  it("keeps the token in memory and reports saves", async () => {
    const saved: string[] = [];
    const t = new SimTokenStore((tok) => saved.push(tok));
    expect(await t.load()).toBeNull();
    await t.save("tok1");
    expect(await t.load()).toBe("tok1");
    await t.clear();
    expect(await t.load()).toBeNull();
    expect(saved).toEqual(["tok1"]);
  });
});

describe("simulated block client", () => {
  it("counts failed calls by kind, and a chaos drop aborts calls in flight and refuses new ones without counting them", async () => {
    const held: import("node:http").ServerResponse[] = [];
    let status = 503;
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        if (req.url?.endsWith("/commands")) held.push(res);
        else res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ result: null, error: "busy", id: 0 }));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    const http = fleetTransport(4, 1);
    const errors: string[] = [];
    const throttled: string[] = [];
    const client = new SimBlockClient(
      { baseUrl: `http://127.0.0.1:${port}/rest/v0`, streamUrl: `http://127.0.0.1:${port}`, nodeId: "SIMTEST000001", transport: http.transport },
      { error: (k) => errors.push(k), throttled: (k) => throttled.push(k) },
    );
    const reading = { G: "1", V: 0, D: 9, DA: "20.5" };
    try {
      await expect(client.data("tok", reading)).rejects.toMatchObject({ status: 503 });
      expect(errors).toEqual(["uplink_http_503"]);
      // A 429 is backpressure (the agent asks again): throttled, not an error; a snapshot upload is
      // not sent again, so a throttled one is lost: an error.
      status = 429;
      await expect(client.data("tok", reading)).rejects.toMatchObject({ status: 429, throttled: true });
      await expect(client.snapshot("tok", "SIMTEST000001_0_0_1004", new Uint8Array([0xff, 0xd8]))).rejects.toMatchObject({ status: 429 });
      expect(throttled).toEqual(["uplink"]);
      expect(errors).toEqual(["uplink_http_503", "snapshot_http_429"]);
      status = 503;
      const loop = new AbortController();
      const poll = client.commands("tok", loop.signal);
      await vi.waitFor(() => expect(held.length).toBe(1), { timeout: 5000 });
      client.drop();
      await expect(poll).rejects.toMatchObject({ status: 0 });
      await expect(client.data("tok", reading, loop.signal)).rejects.toThrow(/dropped/);
      expect(client.dropped).toBe(true);
      expect(errors).toEqual(["uplink_http_503", "snapshot_http_429"]);
      client.restore();
      status = 200;
      await expect(client.data("tok", reading, loop.signal)).resolves.toBeUndefined();
      // The loop's own stop aborts its calls too, and is not an error either.
      const poll2 = client.commands("tok", loop.signal);
      await vi.waitFor(() => expect(held.length).toBe(2), { timeout: 5000 });
      loop.abort();
      await expect(poll2).rejects.toMatchObject({ status: 0 });
      expect(errors).toEqual(["uplink_http_503", "snapshot_http_429"]);
    } finally {
      await http.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
