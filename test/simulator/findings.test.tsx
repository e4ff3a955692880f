/**
 * Simulator fixes checked without a server: report digits, one ingest latency without the
 * TUI's pause, per-block rates that do not flicker, the TUI within 80×24, the server and stream
 * defaults of the command line, the file-descriptor check.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { render } from "ink-testing-library";
import stringWidth from "string-width";
import { describe, expect, it, vi } from "vitest";
import { defaultStream, resolveTargets } from "../../cli/sim-target.js";
import { descriptorsNeeded, fleetDoesNotFit, openFileLimit, processesToFit } from "../../simulator/fd-limit.js";
import { BlockRate } from "../../simulator/fleet/block-rate.js";
import { Latency } from "../../simulator/metrics/histogram.js";
import { Metrics } from "../../simulator/metrics/metrics.js";
import { BLOCKS_PER_WORKER, workerCount } from "../../simulator/part.js";
import { buildReport, summaryLines } from "../../simulator/report.js";
import { validateScenario } from "../../simulator/scenario/parse.js";
import { App } from "../../simulator/tui/app.js";
import type { BlockRow, RunView, ViewSource } from "../../simulator/tui/view.js";

describe("report digits", () => {
  it("prints what the histogram resolves, not its bucket edges (3 ms is 3, not 3.001)", () => {
    const l = new Latency();
    for (let i = 0; i < 100; i++) l.record(3);
    l.record(1234.5678);
    const s = l.summary();
    expect(s.p90).toBe(3);
    expect(s.max).toBe(1230);
    const m = new Metrics();
    m.sent(100);
    for (let i = 0; i < 100; i++) m.acked(3);
    const r = buildReport({
      scenario: validateScenario({ devices: [{ type: "relay" }] }),
      startedAt: 0,
      measuredMs: 10_000,
      blocks: { planned: 1, activated: 1, failed: 0 },
      metrics: m.snapshot(),
      load: { cpu_percent: 1, cpu_percent_max: 1, cpu_user_ms: 1, cpu_system_ms: 1, loop_delay_p50_ms: 1, loop_delay_p99_ms: 1, loop_delay_max_ms: 1, answer_wait_ms: null, answer_wait_max_ms: null },
      measuredAcked: 100,
      callbackDevices: 0,
      commandsInFlight: 0,
      window: { size: 256, full_percent: 0, mean_in_flight: 0.5, cycles: 100, cycle_ms: 2, exchange_ms: 2 },
      histograms: { ingest: "", command: "", callback: "" },
    });
    expect(summaryLines(r)[1]).toBe("ingest ack: p50 3.00 p90 3.00 p99 3.00 max 3.00 ms (100)");
  });
});

describe("ingest latency and pauses", () => {
  it("leaves the time the run was paused out of a reading's latency", () => {
    const m = new Metrics();
    m.paused(1000);
    m.resumed(6000);
    // Submitted before the pause, acknowledged after it: 600 ms of which 5000 were paused.
    m.ackedAt(500, 6100);
    // Submitted and acknowledged after the pause: untouched.
    m.ackedAt(6200, 6210);
    m.paused(7000);
    // Acknowledged during a pause (sent just before it): the pause so far is left out.
    m.ackedAt(6990, 7500);
    expect(m.ingest.percentile(100)).toBe(600);
    expect(m.ingest.percentile(0)).toBe(10);
    expect(m.ingest.count).toBe(3);
  });
});

describe("per-block rate", () => {
  it("does not flicker between 0 and twice the rate when readings fall on the second's edge", () => {
    const r = new BlockRate();
    let total = 0;
    const shown: number[] = [];
    // One reading a second, but counted 0, 2, 0, 2 … by the one-second ticks (after a pause and resume).
    for (let s = 0; s < 12; s++) {
      total += s % 2 === 0 ? 0 : 2;
      r.sample(total);
      shown.push(r.value);
    }
    expect(shown.slice(6).every((v) => v >= 0.8 && v <= 1.2)).toBe(true);
  });
});

function rows(n: number): BlockRow[] {
  return Array.from({ length: n }, (_v, i) => ({
    nodeId: `SIMULATEDFLEET7N${String(i).padStart(8, "0")}`,
    state: "online",
    rate: 1.2,
    sent: 123_456 + i,
    acked: 123_400 + i,
    errors: i,
    backlog: 3,
    devices: "temp=21.3 relay=1 hum=55 btn=1 light=40 led=FF0000 rf=010101 sound=512",
  }));
}

function source(): ViewSource & { pageSizes: number[] } {
  const m = new Metrics();
  for (let s = 0; s < 60; s++) {
    m.sent(10_000 + s);
    m.acked(3, 10_000);
    m.tick();
  }
  const all = rows(500);
  const pageSizes: number[] = [];
  return {
    pageSizes,
    view: ({ sort, page, pageSize, logLines }): RunView => {
      pageSizes.push(pageSize);
      return {
        name: "a-scenario-with-a-rather-long-name-for-the-header",
        phase: "running",
        paused: false,
        elapsedMs: 3_700_000,
        remainingMs: 55_000,
        blocks: { planned: 100_000, started: 100_000, activated: 100_000, online: 99_999, paused: 0, dropped: 1 },
        metrics: m.snapshot(),
        cpuPercent: 93,
        loopDelayP99Ms: 12.5,
        rows: all.slice(page * pageSize, (page + 1) * pageSize),
        page,
        pages: Math.ceil(all.length / pageSize),
        sort,
        log: Array.from({ length: 20 }, (_v, i) => ({ t: 0, level: "warn" as const, text: `chaos: dropped the connection of a block for a while, entry ${i}, with a long tail of text` })).slice(-logLines),
        callbackDevices: 10,
      };
    },
    pause: vi.fn(),
    resume: vi.fn(),
    injectChaos: vi.fn(),
    quit: vi.fn(),
  };
}

describe("TUI size", () => {
  it("fits 80×24: no line wider than 80, at most 23 lines, header first", () => {
    const s = source();
    const ui = render(<App source={s} columns={80} rows={24} />);
    const lines = (ui.lastFrame() ?? "").split("\n");
    ui.unmount();
    expect(lines.length).toBeLessThanOrEqual(23);
    expect(Math.max(...lines.map((l) => stringWidth(l)))).toBeLessThanOrEqual(80);
    expect(lines[0]).toMatch(/^blockkit sim a-scenario/);
    expect(lines.at(-1)).toContain("q quit");
    expect(s.pageSizes.at(-1)).toBeGreaterThanOrEqual(5);
  });

  it("uses a larger terminal: more block rows and log lines", () => {
    const s = source();
    const ui = render(<App source={s} columns={160} rows={50} />);
    const frame = ui.lastFrame() ?? "";
    ui.unmount();
    const lines = frame.split("\n");
    expect(lines.length).toBeLessThanOrEqual(49);
    expect(lines.length).toBeGreaterThan(40);
    expect(Math.max(...lines.map((l) => stringWidth(l)))).toBeLessThanOrEqual(160);
    expect(s.pageSizes.at(-1)).toBeGreaterThan(20);
    expect(frame).toContain("SIMULATEDFLEET7N00000000");
  });
});

describe("command line target", () => {
  it("takes $BLOCKKIT_SERVER and $BLOCKKIT_TOKEN when no flags are given", () => {
    const t = resolveTargets({}, { BLOCKKIT_SERVER: "http://127.0.0.1:9000", BLOCKKIT_TOKEN: "tok-0123456789" });
    expect(t).toEqual({ token: "tok-0123456789", targets: [{ baseUrl: "http://127.0.0.1:9000/rest/v0", streamUrl: "http://127.0.0.1:9001" }] });
    expect(() => resolveTargets({}, {})).toThrow(/give --server URL, set BLOCKKIT_SERVER/);
  });

  it("takes the command line's profile (blockkit login) when no flag or variable names the server", () => {
    const home = mkdtempSync(join(tmpdir(), "blockkit-sim-profile-"));
    try {
      mkdirSync(join(home, "blockkit"), { mode: 0o700 });
      writeFileSync(join(home, "blockkit", "config.yaml"), "current: lab\nprofiles:\n  lab: { server: 'http://10.0.0.5:8000', token: 'lab-token-0123456789' }\n", { mode: 0o600 });
      const t = resolveTargets({}, { XDG_CONFIG_HOME: home });
      expect(t).toEqual({ token: "lab-token-0123456789", targets: [{ baseUrl: "http://10.0.0.5:8000/rest/v0", streamUrl: "http://10.0.0.5:8001" }] });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it("defaults the stream to the server's port + 1, as sim --help says", () => {
    expect(defaultStream("http://127.0.0.1:8000")).toBe("http://127.0.0.1:8001");
    expect(defaultStream("http://h.example/rest/v0")).toBe("http://h.example:81");
    expect(defaultStream("https://[::1]:8443/")).toBe("https://[::1]:8444");
    const t = resolveTargets({ server: ["http://a:8000", "http://b:8100"], token: "t" }, {});
    expect(t.targets.map((x) => x.streamUrl)).toEqual(["http://a:8001", "http://b:8101"]);
    expect(resolveTargets({ server: ["http://a:8000"], stream: "http://cam:7000", token: "t" }, {}).targets[0]?.streamUrl).toBe("http://cam:7000");
  });
});

describe("file descriptors", () => {
  it("reads the limit and refuses a fleet that cannot fit, naming ulimit -n and the number", () => {
    const limit = openFileLimit("Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 4096                 files\n");
    expect(limit).toEqual({ soft: 1024, hard: 4096 });
    expect(fleetDoesNotFit(500, 1, limit)).toBeNull();
    const need = descriptorsNeeded(20_000, 1);
    expect(fleetDoesNotFit(20_000, 1, limit)).toContain(`\`ulimit -n ${need}\``);
    expect(need).toBeGreaterThan(20_000);
    expect(openFileLimit()?.soft).toBeGreaterThan(0);
  });

  it("checks each worker's share and names the --workers that fits (40,000 blocks: 2 workers cannot, 3 can, at 20,000 files)", () => {
    const limit = { soft: 20_000, hard: 20_000 };
    // Two workers of 20,000 blocks: each needs more than its 20,000 files for the polls alone.
    const refusal = fleetDoesNotFit(20_000, 1, limit, { blocks: 40_000, workers: 2 });
    expect(refusal).toContain("the largest of 2 worker processes' shares of 40000");
    expect(refusal).toContain("`--workers 3`");
    expect(processesToFit(40_000, 1, 20_000)).toBe(3);
    expect(fleetDoesNotFit(Math.ceil(40_000 / 3), 1, limit)).toBeNull();
    // The largest share one process holds, and one more block does not fit.
    const most = 2 * 19_000 + 1;
    expect(processesToFit(2 * 19_000, 1, 20_000)).toBe(2);
    expect(descriptorsNeeded(19_000, 1)).toBeLessThanOrEqual(20_000);
    expect(processesToFit(most * 10, 1, 20_000)).toBeGreaterThan(10);
    // Each server adds its connection pools to every process.
    expect(descriptorsNeeded(1000, 3) - descriptorsNeeded(1000, 1)).toBe(2 * 96);
    expect(processesToFit(19_200, 1, 20_000)).toBe(1);
    expect(processesToFit(19_200, 4, 20_000)).toBe(2);
    expect(processesToFit(10, 1, 100)).toBeNull();
  });
});

describe("merging reports", () => {
  it("adds the histograms sample for sample: the merge's percentiles are those of all samples", async () => {
    const { mergeReports } = await import("../../simulator/merge.js");
    const all = new Latency();
    const part = (index: number, samples: number[]) => {
      const m = new Metrics();
      m.sent(samples.length);
      for (const s of samples) {
        m.acked(s);
        all.record(s);
      }
      return buildReport({
        scenario: validateScenario({ blocks: { count: 4 }, devices: [{ type: "relay" }], thresholds: ["p99_ingest_ms < 500"] }),
        part: { index, count: 2 },
        startedAt: 0,
        measuredMs: 1000,
        blocks: { planned: 2, activated: 2, failed: 0 },
        metrics: m.snapshot(),
        load: { cpu_percent: 10 + index, cpu_percent_max: 20, cpu_user_ms: 5, cpu_system_ms: 5, loop_delay_p50_ms: 1, loop_delay_p99_ms: 2 + index, loop_delay_max_ms: 3, answer_wait_ms: null, answer_wait_max_ms: null },
        measuredAcked: samples.length,
        callbackDevices: 0,
        commandsInFlight: 0,
        window: { size: 256, full_percent: 0, mean_in_flight: 0.5, cycles: 100, cycle_ms: 2, exchange_ms: 2 },
        histograms: { ingest: m.ingest.encode(), command: m.command.encode(), callback: m.callback.encode() },
      });
    };
    // One fast part and one slow part: an average of their p99s (~ 505) would pass the threshold.
    const fast = part(0, Array.from({ length: 990 }, (_v, i) => 1 + (i % 10)));
    const slow = part(1, Array.from({ length: 20 }, () => 1000));
    const m = mergeReports([fast, slow]);
    expect(m.latency_ms.ingest).toEqual(all.summary());
    expect(m.latency_ms.ingest.count).toBe(1010);
    expect(m.counts.events_acked).toBe(1010);
    expect(m.simulator.loop_delay_p99_ms).toBe(3);
    expect(m.thresholds[0]).toMatchObject({ text: "p99_ingest_ms < 500", passed: false });
    expect(m.passed).toBe(false);
  });

  it("reports the simulator's CPU both ways: the busiest process and all processes together", () => {
    const report = (index: number, cpu: number) =>
      buildReport({
        scenario: validateScenario({ blocks: { count: 4 }, devices: [{ type: "relay" }], thresholds: ["sim_cpu_percent < 60", "sim_cpu_percent_total < 60"] }),
        part: { index, count: 2 },
        startedAt: 0,
        measuredMs: 1000,
        blocks: { planned: 2, activated: 2, failed: 0 },
        metrics: new Metrics().snapshot(),
        load: { cpu_percent: cpu, cpu_percent_max: cpu + 5, cpu_user_ms: 5, cpu_system_ms: 5, loop_delay_p50_ms: 1, loop_delay_p99_ms: 2, loop_delay_max_ms: 3, answer_wait_ms: null, answer_wait_max_ms: null },
        measuredAcked: 0,
        callbackDevices: 0,
        commandsInFlight: 0,
        window: { size: 256, full_percent: 0, mean_in_flight: 0.5, cycles: 100, cycle_ms: 2, exchange_ms: 2 },
        histograms: { ingest: new Latency().encode(), command: new Latency().encode(), callback: new Latency().encode() },
      });
    const one = report(0, 41.5);
    expect(one.simulator).toMatchObject({ cpu_percent: 41.5, cpu_percent_total: 41.5, processes: 1 });
    expect(summaryLines(one).join("\n")).toContain("simulator: CPU 41.5% (max 46.5%");
    return import("../../simulator/merge.js").then(({ mergeReports }) => {
      const m = mergeReports([one, report(1, 43)]);
      expect(m.simulator).toMatchObject({ cpu_percent: 43, cpu_percent_total: 84.5, processes: 2 });
      expect(summaryLines(m).join("\n")).toContain("simulator: CPU 84.5% together over 2 processes, busiest 43% (max 48%");
      expect(m.thresholds.map((t) => [t.text, t.actual, t.passed])).toEqual([
        ["sim_cpu_percent < 60", 43, true],
        ["sim_cpu_percent_total < 60", 84.5, false],
      ]);
      // Merging merged reports (shards of workers) keeps adding.
      expect(mergeReports([{ ...m, part: { index: 0, count: 2 } }, { ...m, part: { index: 1, count: 2 } }]).simulator).toMatchObject({ cpu_percent: 43, cpu_percent_total: 169, processes: 4 });
    });
  });
});

describe("worker processes", () => {
  it("defaults to the number of cores, a small fleet staying in one process", () => {
    // Cores, not one process per 1,000 blocks: 1,500 blocks on 8 cores run in 8 processes.
    expect(workerCount(1500, undefined, 8)).toBe(8);
    expect(workerCount(40_000, undefined, 2)).toBe(2);
    expect(workerCount(20, undefined, 8)).toBe(1);
    expect(workerCount(BLOCKS_PER_WORKER + 1, undefined, 8)).toBe(2);
    expect(workerCount(10_000, undefined, 1)).toBe(1);
    // Given: as given, but never more processes than blocks.
    expect(workerCount(20, 4, 8)).toBe(4);
    expect(workerCount(3, 8, 8)).toBe(3);
  });
});
