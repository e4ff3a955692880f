/**
 * The live status of a `--workers` run as the TUI and the progress lines read it (mergeStatus,
 * simulator/status.ts): counters, errors and blocks summed, the per-second series added second by
 * second (aligned on the newest), the least advanced phase, and latencies from the workers'
 * histograms added sample for sample: an average of the workers' p99s would hide a slow worker.
 */
import { describe, expect, it } from "vitest";
import { Metrics } from "../../simulator/metrics/metrics.js";
import { type RunStatus, mergeStatus } from "../../simulator/status.js";

function part(m: Metrics, over: Partial<RunStatus>): { status: RunStatus; histograms: { ingest: string; command: string; callback: string } } {
  const status: RunStatus = {
    name: "fleet",
    phase: "running",
    paused: false,
    elapsedMs: 10_000,
    measuredMs: 10_000,
    remainingMs: 50_000,
    durationMs: 60_000,
    blocks: { planned: 10, started: 10, activated: 10, online: 10, paused: 0, dropped: 0 },
    metrics: m.snapshot(),
    ackRate: 10,
    cpuPercent: 20,
    loopDelayP99Ms: 5,
    callbackDevices: 1,
    ...over,
  };
  return { status, histograms: { ingest: m.ingest.encode(), command: m.command.encode(), callback: m.callback.encode() } };
}

describe("mergeStatus", () => {
  it("sums what the workers count and takes the latencies from their added histograms", () => {
    const fast = new Metrics();
    const slow = new Metrics();
    for (let i = 0; i < 99; i++) fast.acked(2);
    fast.sent(99);
    slow.acked(900);
    slow.sent(3);
    slow.error("uplink_network");
    fast.error("uplink_network");
    fast.error("poll_http_503");
    fast.tick();
    fast.tick();
    slow.tick();
    const merged = mergeStatus([
      part(fast, { phase: "running", measuredMs: 10_000, ackRate: 9.9, cpuPercent: 30, loopDelayP99Ms: 4 }),
      part(slow, { phase: "warmup", measuredMs: 8_000, ackRate: 0.1, cpuPercent: 25, loopDelayP99Ms: 12, blocks: { planned: 10, started: 9, activated: 8, online: 7, paused: 1, dropped: 0 } }),
    ]);
    expect(merged.metrics.counters.events_acked).toBe(100);
    expect(merged.metrics.counters.events_sent).toBe(102);
    expect(merged.metrics.counters.errors).toBe(3);
    expect(merged.metrics.errors_by_kind).toEqual({ uplink_network: 2, poll_http_503: 1 });
    expect(merged.blocks).toEqual({ planned: 20, started: 19, activated: 18, online: 17, paused: 1, dropped: 0 });
    expect(merged.phase).toBe("warmup");
    expect(merged.measuredMs).toBe(8_000);
    expect(merged.ackRate).toBe(10);
    expect(merged.cpuPercent).toBe(55);
    expect(merged.loopDelayP99Ms).toBe(12);
    expect(merged.callbackDevices).toBe(2);
    // 100 samples, the slowest at 900 ms: the merged p99 is 2 ms and the max 900 (99 of 100 at 2 ms),
    // where the mean of the workers' p99s would say 451.
    expect(merged.metrics.ingest.count).toBe(100);
    expect(merged.metrics.ingest.p50).toBe(2);
    expect(merged.metrics.ingest.max).toBe(900);
    expect(merged.metrics.ingest.p99).toBe(2);
    // The series: the fast worker's two seconds and the slow one's one, aligned on the newest second.
    expect(merged.metrics.series.acked).toEqual([99, 1]);
  });

  it("refuses no parts", () => {
    expect(() => mergeStatus([])).toThrow(/no parts/);
  });
});
