import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { CallbackReceiver } from "../../simulator/callback-receiver.js";
import { EventLog } from "../../simulator/event-log.js";
import { Latency } from "../../simulator/metrics/histogram.js";
import { SelfLoad } from "../../simulator/metrics/load.js";
import { Metrics } from "../../simulator/metrics/metrics.js";
import { buildReport, summaryLines } from "../../simulator/report.js";
import { validateScenario } from "../../simulator/scenario/parse.js";

describe("latency histogram", () => {
  it("gives percentiles and max in ms, null without samples", () => {
    const l = new Latency();
    expect(l.summary()).toEqual({ count: 0, p50: null, p90: null, p99: null, max: null, mean: null });
    for (let i = 1; i <= 1000; i++) l.record(i / 10);
    const s = l.summary();
    expect(s.count).toBe(1000);
    expect(s.p50).toBeCloseTo(50, 0);
    expect(s.p90).toBeCloseTo(90, 0);
    expect(s.p99).toBeCloseTo(99, 0);
    expect(s.max).toBeCloseTo(100, 1);
    l.record(-5);
    expect(l.percentile(0)).toBe(0);
  });

  it("never prints a percentile above the maximum (a bucket's highest value is past the samples in it)", () => {
    const l = new Latency();
    for (let i = 0; i < 39; i++) l.record(2);
    l.record(9); // 9,000 µs sits in a bucket whose highest equivalent value is 9,007 µs: "9.01"
    const s = l.summary();
    expect(s.max).toBe(9);
    expect(s.p99).toBe(9);
    expect(l.percentile(100)).toBe(9);
    expect(s.p50).toBe(2);
    const m = new Latency();
    for (let i = 0; i < 100; i++) m.record(9 + (i % 10) / 1000); // 9.000 … 9.009 ms
    m.record(3);
    expect(m.summary().p90).toBe(9); // not 9.01: the bucket's highest value, rounded up
    expect(m.percentile(0)).toBe(3);
    expect(m.summary().max).toBe(9.01); // the maximum is a sample: rounded to nearest
  });
});

describe("metrics", () => {
  it("counts, keeps per-second series and skips latencies while not recording", () => {
    const m = new Metrics();
    m.recording = false;
    m.sent(3);
    m.acked(5, 3);
    m.error("uplink_http_503");
    m.error("uplink_http_503");
    m.tick();
    expect(m.ingest.count).toBe(0);
    m.recording = true;
    m.sent();
    m.acked(7);
    m.commandSent();
    m.commandReceived(12);
    m.callbackReceived(30);
    m.tick();
    const s = m.snapshot();
    expect(s.counters).toMatchObject({ events_sent: 4, events_acked: 4, errors: 2, commands_sent: 1, commands_received: 1, callbacks_received: 1 });
    expect(s.errors_by_kind).toEqual({ uplink_http_503: 2 });
    expect(s.series.sent).toEqual([3, 1]);
    expect(s.series.errors).toEqual([2, 0]);
    expect(s.ingest.count).toBe(1);
    expect(s.command.p50).toBeCloseTo(12, 1);
  });

  it("the simulator's own load reports CPU and event-loop delay", async () => {
    const load = new SelfLoad();
    load.start();
    // The delay monitor measures between its own ticks: let it tick once first.
    await new Promise((r) => setTimeout(r, 30));
    // Burn 100 ms of CPU (however long a busy machine takes to give it), blocking the loop meanwhile.
    const cpu0 = process.cpuUsage();
    const deadline = Date.now() + 5000;
    while (process.cpuUsage(cpu0).user < 100_000 && Date.now() < deadline) Math.sqrt(Math.random());
    await new Promise((r) => setTimeout(r, 30));
    expect(load.sample()).toBeGreaterThan(0);
    const s = load.summary();
    load.stop();
    expect(s.cpu_user_ms).toBeGreaterThanOrEqual(100);
    expect(s.cpu_percent).toBeGreaterThan(0);
    expect(s.loop_delay_max_ms).toBeGreaterThanOrEqual(50);
  });

  it("measures how long an arrived answer waits for the event loop (an echo from a worker thread)", async () => {
    const load = new SelfLoad();
    load.start();
    try {
      await waitUntil(() => (load.summary().answer_wait_ms ?? -1) >= 0);
      // Idle, an echo waits only for the scheduler (62 ms seen on 2 loaded cores, so no fixed bound
      // like "< 50"): less than behind the busy loop below, which a loaded machine stretches too.
      const idle = load.summary().answer_wait_ms as number;
      // An echo in flight while the loop is busy for 100 ms of CPU waits at least that long.
      load.ping();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const deadline = Date.now() + 5000;
      while (process.cpuUsage(cpu0).user < 100_000 && Date.now() < deadline) Math.sqrt(Math.random());
      const busyMs = performance.now() - t0;
      await waitUntil(() => (load.summary().answer_wait_max_ms ?? 0) >= busyMs * 0.9);
      expect(load.summary().answer_wait_max_ms).toBeGreaterThanOrEqual(90);
      expect(idle).toBeLessThan(busyMs * 0.9);
      // mark() starts a new window without the old samples.
      load.mark();
      expect(load.summary().answer_wait_ms).toBeNull();
    } finally {
      load.stop();
    }
  });
});

/** Waits on the event loop for `cond`, at most 5 s. */
async function waitUntil(cond: () => boolean): Promise<void> {
  const end = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met within 5 s");
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("report", () => {
  const scenario = validateScenario({ devices: [{ type: "relay" }], thresholds: ["errors == 0", "p99_command_ms < 50", "p99_callback_ms < 100"] });
  const input = (errors: number) => {
    const m = new Metrics();
    m.sent(100);
    m.acked(2, 100);
    for (let i = 0; i < errors; i++) m.error("poll_network");
    m.commandSent();
    m.commandReceived(20);
    return {
      scenario,
      startedAt: Date.UTC(2026, 0, 1),
      measuredMs: 10_000,
      blocks: { planned: 1, activated: 1, failed: 0 },
      metrics: m.snapshot(),
      load: { cpu_percent: 12, cpu_percent_max: 20, cpu_user_ms: 1, cpu_system_ms: 1, loop_delay_p50_ms: 1, loop_delay_p99_ms: 3, loop_delay_max_ms: 4, answer_wait_ms: null, answer_wait_max_ms: null },
      measuredAcked: 100,
      callbackDevices: 0,
      commandsInFlight: 0,
      window: { size: 256, full_percent: 0, mean_in_flight: 0.5, cycles: 100, cycle_ms: 2, exchange_ms: 2 },
      histograms: { ingest: "", command: "", callback: "" },
    };
  };

  it("passes or fails on thresholds; no callback data fails its threshold honestly", () => {
    const r = buildReport(input(0));
    expect(r.events_per_s).toBe(10);
    expect(r.simulator.cpu_us_per_event).toBe(20);
    expect(r.counts.callbacks_received).toBe(0);
    expect(r.thresholds.map((t) => t.passed)).toEqual([true, true, false]);
    expect(r.passed).toBe(false);
    expect(summaryLines(r).join("\n")).toMatch(/threshold FAIL p99_callback_ms < 100 \(actual no data\)/);
    const r2 = buildReport({ ...input(3), scenario: validateScenario({ devices: [{ type: "relay" }], thresholds: ["errors == 0"] }) });
    expect(r2.passed).toBe(false);
    expect(r2.errors_by_kind).toEqual({ poll_network: 3 });
    const ok = { ...input(0), scenario: validateScenario({ devices: [{ type: "relay" }], thresholds: ["errors == 0"] }) };
    expect(buildReport(ok).passed).toBe(true);
    const none = buildReport({ ...ok, blocks: { planned: 1, activated: 0, failed: 1 } });
    expect(none.passed).toBe(false);
    expect(summaryLines(none).join("\n")).toContain("FAIL: no block activated");
  });

  it("names the errors' kinds under the counts, most frequent first (before: \"1 errors\" alone, e.g. for a mistyped token)", () => {
    const lines = summaryLines({ ...buildReport(input(0)), errors_by_kind: { poll_network: 3, activate_http_401: 5 } });
    expect(lines[1]).toBe("errors: activate_http_401 5, poll_network 3");
    const many = Object.fromEntries(Array.from({ length: 8 }, (_v, k) => [`kind_${k}`, 8 - k]));
    expect(summaryLines({ ...buildReport(input(0)), errors_by_kind: many })[1]).toBe("errors: kind_0 8, kind_1 7, kind_2 6, kind_3 5, kind_4 4, kind_5 3, … and 2 more kinds");
    expect(summaryLines(buildReport(input(0))).join("\n")).not.toMatch(/^errors:/m);
  });

  it("says a run stopped during start-up was interrupted, not failed by the server, and measures nothing over its empty window", () => {
    const i = input(0);
    const early = buildReport({ ...i, measuredMs: 0, measuredAcked: 0, blocks: { planned: 3, activated: 0, failed: 3 } });
    const cutEarly = { signal: "SIGINT", during_start_up: true } as const;
    const text = summaryLines({ ...early, interrupted: cutEarly }).join("\n");
    expect(text).toContain("interrupted during start-up, before any block activated: thresholds not checked");
    expect(text).not.toContain("FAIL");
    expect(text).not.toContain("server reachable");
    expect(text).not.toMatch(/CPU|µs\/event|bottleneck: |\/s$/m);
    expect(text).toMatch(/^simulator: load and bottleneck not measured \(0 s measured: interrupted during start-up\)$/m);
    expect(text).toMatch(/throttled, rate not measured/);
    const someUp = summaryLines({ ...buildReport({ ...i, measuredMs: 0, blocks: { planned: 3, activated: 1, failed: 2 } }), interrupted: cutEarly });
    expect(someUp.at(-1)).toBe("interrupted during start-up, before the measured time: thresholds not checked");
    // A window under a second (a run stopped just after its warm-up) has no rate or load either; a full one has.
    expect(summaryLines(buildReport({ ...i, measuredMs: 400 })).join("\n")).toMatch(/^simulator: load and bottleneck not measured \(0\.4 s measured\)$/m);
    expect(summaryLines(buildReport(i)).join("\n")).toMatch(/^simulator: CPU 12% .*bottleneck: none/m);
  });

  it("names the simulator as the bottleneck when its CPU is saturated", () => {
    const i = input(0);
    expect(buildReport(i).simulator.bottleneck).toBe("none");
    expect(buildReport({ ...i, load: { ...i.load, cpu_percent: 97 } }).simulator.bottleneck).toBe("simulator");
    expect(buildReport({ ...i, load: { ...i.load, cpu_percent: 60, loop_delay_p99_ms: 150 } }).simulator.bottleneck).toBe("simulator");
    expect(buildReport({ ...i, load: { ...i.load, cpu_percent: 20, loop_delay_p99_ms: 300 } }).simulator.bottleneck).toBe("host");
    const slow = input(0);
    slow.metrics.ingest.p50 = 2000;
    slow.metrics.ingest.p99 = 2500;
    expect(buildReport(slow).simulator.bottleneck).toBe("server");
    // The reason prints its figures as the summary lines do, not to the microsecond.
    expect(buildReport({ ...slow, load: { ...slow.load, loop_delay_p99_ms: 38.175 } }).simulator.reason).toBe(
      "ingest p50 2000 ms p99 2500 ms, far above the simulator's own event-loop delay (p99 38.2 ms)",
    );
    const waits = { size: 256, full_percent: 99, mean_in_flight: 255, cycles: 60_000, cycle_ms: 40.125, exchange_ms: 33.3333 };
    expect(buildReport({ ...slow, window: waits, load: { ...slow.load, loop_delay_p99_ms: 85.4321, answer_wait_ms: 2.719 } }).simulator.reason).toBe(
      "the send window (256 requests in flight) was full 99% of the time, each request held its slot 40.1 ms (33.3 ms of it on a connection); " +
        "an answer that has arrived waits 2.72 ms on average for the simulator's event loop: the rest is the server's",
    );
    // Slow acknowledgements explained by the simulator's own stalls are the simulator's.
    expect(buildReport({ ...slow, load: { ...slow.load, cpu_percent: 95, loop_delay_p99_ms: 900 } }).simulator.bottleneck).toBe("simulator");
  });

  it("with a full send window, blames whoever held the slots: the server's slow answers or the simulator's own loop", () => {
    const queued = input(0);
    queued.metrics.ingest.p50 = 900;
    queued.metrics.ingest.p99 = 1500;
    const full = { size: 256, full_percent: 80, mean_in_flight: 250, cycles: 40_000, cycle_ms: 25, exchange_ms: 25 };
    const loopBound = buildReport({ ...queued, window: full, load: { ...queued.load, cpu_percent: 70, loop_delay_p99_ms: 40 } });
    expect(loopBound.simulator.bottleneck).toBe("simulator");
    expect(loopBound.simulator.reason).toMatch(/send window \(256 requests in flight\) was full 80% of the time, each request held its slot 25 ms, close to the simulator's own event-loop delay/);
    expect(loopBound.simulator.send_window).toEqual(full);
    // Slots held long because requests queued for one of fewer connections: still the simulator's loop.
    const pooled = buildReport({ ...queued, window: { ...full, size: 1024, mean_in_flight: 1000, cycle_ms: 236, exchange_ms: 30 }, load: { ...queued.load, cpu_percent: 70, loop_delay_p99_ms: 45 } });
    expect(pooled.simulator.bottleneck).toBe("simulator");
    expect(pooled.simulator.reason).toMatch(/held its slot 236 ms \(30 ms of it on a connection\)/);
    const slowServer = buildReport({ ...queued, window: { ...full, cycle_ms: 400, exchange_ms: 400 }, load: { ...queued.load, cpu_percent: 30, loop_delay_p99_ms: 20 } });
    expect(slowServer.simulator.bottleneck).toBe("server");
    expect(slowServer.simulator.reason).toMatch(/the server answers slowly/);
    const busy = buildReport({ ...queued, window: full, load: { ...queued.load, cpu_percent: 99, loop_delay_p99_ms: 40 } });
    expect(busy.simulator.bottleneck).toBe("simulator");
    expect(busy.simulator.reason).toMatch(/run more simulator processes/);
  });

  it("with a full send window and the echo's measure, splits each exchange into the simulator's wait and the server's rest", () => {
    const queued = input(0);
    const full = { size: 256, full_percent: 99, mean_in_flight: 255, cycles: 60_000, cycle_ms: 40, exchange_ms: 40 };
    // Answers wait 3 ms for the loop; requests take 40: the server (whatever the loop's p99 says).
    const server = buildReport({ ...queued, window: full, load: { ...queued.load, cpu_percent: 70, loop_delay_p99_ms: 85, answer_wait_ms: 3, answer_wait_max_ms: 80 } });
    expect(server.simulator.bottleneck).toBe("server");
    expect(server.simulator.reason).toMatch(/an answer that has arrived waits 3 ms on average for the simulator's event loop: the rest is the server's/);
    // Answers wait 20 ms of the 40: the simulator.
    const own = buildReport({ ...queued, window: full, load: { ...queued.load, cpu_percent: 80, loop_delay_p99_ms: 85, answer_wait_ms: 20, answer_wait_max_ms: 90 } });
    expect(own.simulator.bottleneck).toBe("simulator");
    expect(own.simulator.reason).toMatch(/most of it is the simulator's/);
    // A saturated CPU is the simulator's whatever the echo says.
    expect(buildReport({ ...queued, window: full, load: { ...queued.load, cpu_percent: 95, answer_wait_ms: 1, answer_wait_max_ms: 2 } }).simulator.bottleneck).toBe("simulator");
  });
});

describe("callback receiver", () => {
  let receiver: CallbackReceiver | null = null;
  afterEach(async () => {
    await receiver?.stop();
    receiver = null;
  });

  it("times real deliveries and refuses malformed ones", async () => {
    const metrics = new Metrics();
    receiver = new CallbackReceiver(metrics, { clock: () => 1_700_000_000_250 });
    await receiver.start();
    const url = receiver.urlFor("NODE00000001_1_0_9");
    const body = { GUID: "NODE00000001_1_0_9", G: "1", V: 0, D: 9, DA: 21.5, timestamp: 1_700_000_000_000, node: "NODE00000001" };
    const ok = await request(url, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
    expect(ok.statusCode).toBe(200);
    await ok.body.text();
    const bad = await request(url, { method: "POST", body: "{}" });
    expect(bad.statusCode).toBe(400);
    await bad.body.text();
    expect(metrics.counters.callbacks_received).toBe(1);
    expect(metrics.callback.percentile(50)).toBeCloseTo(250, 0);
    expect(metrics.snapshot().errors_by_kind).toEqual({ callback_bad_payload: 1 });
    expect(receiver.perDevice.get("NODE00000001_1_0_9")).toBe(1);
  });
});

describe("event log", () => {
  it("keeps a bounded tail and caps lines per second", () => {
    let now = 1000;
    const log = new EventLog(5, 3, () => now);
    for (let i = 0; i < 10; i++) log.add("error", `e${i}`);
    expect(log.tail(10).map((e) => e.text)).toEqual(["e0", "e1", "e2"]);
    expect(log.suppressed).toBe(7);
    now += 1000;
    for (let i = 0; i < 3; i++) log.add("warn", `w${i}`);
    expect(log.tail(10).map((e) => e.text)).toEqual(["e1", "e2", "w0", "w1", "w2"]);
  });
});
