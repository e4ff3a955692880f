/**
 * A run's status as the headless progress lines and the TUI read it: from one SimRunner, or merged
 * from the workers of `--workers` (simulator/workers/). One shape, so both views work either way.
 */
import type { LatencySummary } from "./metrics/histogram.js";
import { Latency } from "./metrics/histogram.js";
import type { MetricsSnapshot } from "./metrics/metrics.js";
import type { RunPhase, SimRunner } from "./runner.js";

export interface BlockCountsNow {
  planned: number;
  started: number;
  activated: number;
  online: number;
  paused: number;
  dropped: number;
}

export interface RunStatus {
  name: string;
  phase: RunPhase;
  paused: boolean;
  /** Time since the start while ramping or warming up, the measured time after. */
  elapsedMs: number;
  measuredMs: number;
  remainingMs: number;
  durationMs: number;
  blocks: BlockCountsNow;
  metrics: MetricsSnapshot;
  /** Events acknowledged per second over the measured window (SimRunner.ackRate). */
  ackRate: number;
  /** Percent of one core (summed over the processes of a run with workers). */
  cpuPercent: number;
  loopDelayP99Ms: number;
  callbackDevices: number;
}

export function runnerStatus(r: SimRunner, now = Date.now()): RunStatus {
  const counts = { planned: r.fleet.planned, started: r.fleet.running, activated: r.fleet.activated, online: 0, paused: 0, dropped: 0 };
  for (const b of r.fleet.blocks) {
    const s = b.state;
    if (s === "online") counts.online++;
    else if (s === "paused") counts.paused++;
    else if (s === "dropped") counts.dropped++;
  }
  return {
    name: r.scenario.name,
    phase: r.phase,
    paused: r.paused,
    elapsedMs: r.phase === "ramping" || r.phase === "warmup" ? now - r.startedAt : r.measuredMs(),
    measuredMs: r.measuredMs(),
    remainingMs: r.remainingMs(),
    durationMs: r.scenario.duration_s * 1000,
    blocks: counts,
    metrics: r.metrics.snapshot(),
    ackRate: r.ackRate(),
    cpuPercent: r.load.current,
    loopDelayP99Ms: r.load.loopDelayP99Ms(),
    callbackDevices: r.callbacks.registered.length,
  };
}

const PHASES: RunPhase[] = ["starting", "ramping", "warmup", "running", "draining", "done"];

/** The status of several processes' parts as one: sums, the least advanced phase, latencies from the added histograms. */
export function mergeStatus(parts: { status: RunStatus; histograms: { ingest: string; command: string; callback: string } }[]): RunStatus {
  const first = parts[0]?.status;
  if (!first) throw new TypeError("mergeStatus: no parts");
  const all = parts.map((p) => p.status);
  const sum = (pick: (s: RunStatus) => number): number => all.reduce((n, s) => n + pick(s), 0);
  const counters = { ...first.metrics.counters };
  for (const k of Object.keys(counters) as (keyof typeof counters)[]) counters[k] = sum((s) => s.metrics.counters[k]);
  const errors: Record<string, number> = {};
  for (const s of all) for (const [k, v] of Object.entries(s.metrics.errors_by_kind)) errors[k] = (errors[k] ?? 0) + v;
  const throttled: Record<string, number> = {};
  for (const s of all) for (const [k, v] of Object.entries(s.metrics.throttled_by_kind)) throttled[k] = (throttled[k] ?? 0) + v;
  const series = { ...first.metrics.series };
  for (const k of Object.keys(series) as (keyof typeof series)[]) {
    const len = Math.max(...all.map((s) => s.metrics.series[k].length));
    series[k] = Array.from({ length: len }, (_v, i) => all.reduce((n, s) => n + (s.metrics.series[k][s.metrics.series[k].length - len + i] ?? 0), 0));
  }
  const latency = (k: "ingest" | "command" | "callback"): LatencySummary => {
    const l = new Latency();
    for (const p of parts) if (p.histograms[k]) l.add(Latency.decode(p.histograms[k]));
    return l.summary();
  };
  const blocks = { ...first.blocks };
  for (const k of Object.keys(blocks) as (keyof BlockCountsNow)[]) blocks[k] = sum((s) => s.blocks[k]);
  return {
    name: first.name,
    phase: PHASES[Math.min(...all.map((s) => PHASES.indexOf(s.phase)))] as RunPhase,
    paused: all.some((s) => s.paused),
    elapsedMs: Math.max(...all.map((s) => s.elapsedMs)),
    measuredMs: Math.min(...all.map((s) => s.measuredMs)),
    remainingMs: Math.max(...all.map((s) => s.remainingMs)),
    durationMs: first.durationMs,
    blocks,
    metrics: { counters, errors_by_kind: errors, throttled_by_kind: throttled, ingest: latency("ingest"), command: latency("command"), callback: latency("callback"), series },
    ackRate: Math.round(sum((s) => s.ackRate) * 100) / 100,
    cpuPercent: sum((s) => s.cpuPercent),
    loopDelayP99Ms: Math.max(...all.map((s) => s.loopDelayP99Ms)),
    callbackDevices: sum((s) => s.callbackDevices),
  };
}
