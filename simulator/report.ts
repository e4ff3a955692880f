/**
 * The run's JSON report (`--report FILE`) and its verdict: thresholds checked against a flat metric
 * table, and a statement of which side limited the run (the simulator's own CPU or event loop, or
 * the server).
 */
import { writeFileSync } from "node:fs";
import type { LoadSummary } from "./metrics/load.js";
import type { MetricsSnapshot } from "./metrics/metrics.js";
import type { WindowSummary } from "./fleet/send-window.js";
import type { LoadedScenario } from "./scenario/parse.js";
import { ms } from "./tui/format.js";
import { type ThresholdMetric, type ThresholdResult, checkThresholds } from "./scenario/thresholds.js";

/** Who limited the run: the simulator process, the server, the machine (other load), or nobody. */
export type Bottleneck = "simulator" | "server" | "host" | "none";

export interface BlockCounts {
  planned: number;
  /** Blocks that got their token, including those whose activation was answered during the drain. */
  activated: number;
  failed: number;
  /**
   * Activation requests still unanswered when the drain time ran out (then abandoned): the server
   * may carry them out after the run, so those blocks may be in the account though not counted as
   * activated. Absent in reports of older blockkit versions (0).
   */
  in_flight_at_stop?: number;
}

export interface Report {
  scenario: LoadedScenario;
  started_at: string;
  /** Measured time (after the warm-up), seconds. */
  duration_s: number;
  blocks: BlockCounts;
  /**
   * `commands_put_unanswered_at_stop`: command PUTs still unanswered when the drain time ran out
   * (then abandoned): the server may carry them out after the run. Absent in reports of older
   * blockkit versions (0).
   */
  counts: MetricsSnapshot["counters"] & { commands_lost: number; commands_in_flight: number; commands_put_unanswered_at_stop?: number; callback_devices: number };
  errors_by_kind: Record<string, number>;
  /**
   * Answers 429 by the call that got them: the server rate-limited a credential and the call was
   * asked again after a wait. Backpressure, not errors (`counts.throttled` is their sum).
   */
  throttled_by_kind: Record<string, number>;
  latency_ms: { ingest: MetricsSnapshot["ingest"]; command: MetricsSnapshot["command"]; callback: MetricsSnapshot["callback"] };
  events_per_s: number;
  simulator: LoadSummary & {
    /**
     * `cpu_percent` is the busiest process's (percent of one core; above ~90 that process is the
     * limit); this is all the simulator's processes together (`--workers`, merged shards): what
     * the fleet cost the machines. One process: the same figure.
     */
    cpu_percent_total: number;
    /** The simulator processes the report covers (1, or the parts merged). */
    processes: number;
    /** CPU of the simulator per event acknowledged in the measured window, microseconds. */
    cpu_us_per_event: number | null;
    send_window: WindowSummary;
    bottleneck: Bottleneck;
    reason: string;
  };
  /** Which part of the scenario this process ran (`--shard`, `--workers`); null: all of it. */
  part: FleetPart | null;
  /** The latency histograms (HdrHistogram, compressed base64), so reports merge exactly (merge.ts). */
  histograms: { ingest: string; command: string; callback: string };
  thresholds: ThresholdResult[];
  passed: boolean;
  /**
   * The run was cut short by a signal (Ctrl-C, the TUI's q, SIGTERM): not a pass, whatever its
   * thresholds say. A merge with such a part is not a pass either. Absent in older reports.
   */
  interrupted?: Interrupted | null;
}

/** How a run was cut short. */
export interface Interrupted {
  signal: "SIGINT" | "SIGTERM";
  /** Before the measured time began (nothing measured). */
  during_start_up: boolean;
}

/** Part `index` of `count`: the blocks whose index i has i % count === index. */
export interface FleetPart {
  index: number;
  count: number;
}

export interface ReportInput {
  scenario: LoadedScenario;
  startedAt: number;
  measuredMs: number;
  blocks: BlockCounts;
  metrics: MetricsSnapshot;
  /** The simulator's load over the measured window. */
  load: LoadSummary;
  /** Events acknowledged during the measured window. */
  measuredAcked: number;
  callbackDevices: number;
  /** Commands still in flight when the run ended (not counted as lost). */
  commandsInFlight: number;
  /** Command PUTs abandoned unanswered at the stop. Default 0. */
  commandsAbandoned?: number;
  /** The fleet's send window over the measured window. */
  window: WindowSummary;
  part?: FleetPart | null;
  histograms: Report["histograms"];
}

/** A figure of a sentence: three significant digits, no trailing zeros (38.175 -> 38.2, 25 -> 25). */
function figure(v: number): string {
  return String(Math.abs(v) >= 1000 ? Math.round(v) : Number(v.toPrecision(3)));
}

/** Above these the simulator itself limits the run. */
const CPU_LIMIT_PERCENT = 90;
const LOOP_DELAY_LIMIT_MS = 100;

function bottleneck(i: ReportInput): { bottleneck: Bottleneck; reason: string } {
  const l = i.load;
  // A full send window: readings waited in the simulator for a slot, so their latency says little;
  // how long each cycle held its slot, against the simulator's own stalls, says who was slow.
  const w = i.window;
  if (w.full_percent >= 50 && w.cycle_ms !== null && w.exchange_ms !== null) {
    const full =
      `the send window (${w.size} requests in flight) was full ${w.full_percent}% of the time, each request held its slot ${figure(w.cycle_ms)} ms` +
      (w.exchange_ms < w.cycle_ms ? ` (${figure(w.exchange_ms)} ms of it on a connection)` : "");
    if (l.cpu_percent >= CPU_LIMIT_PERCENT) {
      return { bottleneck: "simulator", reason: `${full}; simulator CPU ${l.cpu_percent}% of a core: run more simulator processes` };
    }
    const wait = l.answer_wait_ms;
    if (wait !== null) {
      // The simulator's share of an exchange is the time an arrived answer waits for its loop.
      const own = `an answer that has arrived waits ${figure(wait)} ms on average for the simulator's event loop`;
      if (w.exchange_ms > 3 * wait + 5) return { bottleneck: "server", reason: `${full}; ${own}: the rest is the server's` };
      return { bottleneck: "simulator", reason: `${full}; ${own}: most of it is the simulator's` };
    }
    if (w.exchange_ms > 5 * l.loop_delay_p99_ms) {
      return { bottleneck: "server", reason: `${full}, far above the simulator's event-loop delay p99 ${figure(l.loop_delay_p99_ms)} ms: the server answers slowly` };
    }
    return {
      bottleneck: "simulator",
      reason: `${full}, close to the simulator's own event-loop delay p99 ${figure(l.loop_delay_p99_ms)} ms: answers wait for the simulator's event loop`,
    };
  }
  const c = i.metrics.counters;
  const backlog = c.events_sent - c.events_acked - c.errors;
  const p50 = i.metrics.ingest.p50 ?? 0;
  const p99 = i.metrics.ingest.p99 ?? 0;
  const serverSlow = p99 > 1000 || backlog > Math.max(100, c.events_sent * 0.05) || (i.metrics.throttled_by_kind.uplink ?? 0) > 0;
  const server = {
    bottleneck: "server" as const,
    reason: `ingest p50 ${figure(p50)} ms p99 ${figure(p99)} ms, far above the simulator's own event-loop delay (p99 ${figure(l.loop_delay_p99_ms)} ms)`,
  };
  // Readings that wait much longer than the simulator's loop ever stalls wait on the server.
  if (serverSlow && p50 > 5 * l.loop_delay_p99_ms) return server;
  if (l.loop_delay_p99_ms >= LOOP_DELAY_LIMIT_MS && l.cpu_percent < CPU_LIMIT_PERCENT / 2) {
    return {
      bottleneck: "host",
      reason: `event-loop delay p99 ${figure(l.loop_delay_p99_ms)} ms while the simulator used only ${l.cpu_percent}% of a core: the machine is busy with other work`,
    };
  }
  if (l.cpu_percent >= CPU_LIMIT_PERCENT || l.loop_delay_p99_ms >= LOOP_DELAY_LIMIT_MS) {
    return {
      bottleneck: "simulator",
      reason: `simulator CPU ${l.cpu_percent}% of a core, event-loop delay p99 ${figure(l.loop_delay_p99_ms)} ms: run more simulator processes`,
    };
  }
  if (serverSlow) return server;
  return { bottleneck: "none", reason: "neither side saturated" };
}

export function metricTable(r: Omit<Report, "thresholds" | "passed">): Record<ThresholdMetric, number | null> {
  const c = r.counts;
  const t: Record<string, number | null> = {
    events_sent: c.events_sent,
    events_acked: c.events_acked,
    events_per_s: r.events_per_s,
    errors: c.errors,
    throttled: c.throttled ?? 0,
    error_rate: c.events_sent > 0 ? c.errors / c.events_sent : 0,
    commands_sent: c.commands_sent,
    commands_received: c.commands_received,
    commands_lost: c.commands_lost,
    callbacks_received: c.callbacks_received,
    sim_cpu_percent: r.simulator.cpu_percent,
    sim_cpu_percent_total: r.simulator.cpu_percent_total,
    loop_delay_p99_ms: r.simulator.loop_delay_p99_ms,
  };
  for (const k of ["ingest", "command", "callback"] as const) {
    const s = r.latency_ms[k];
    t[`p50_${k}_ms`] = s.p50;
    t[`p90_${k}_ms`] = s.p90;
    t[`p99_${k}_ms`] = s.p99;
    t[`max_${k}_ms`] = s.max;
  }
  return t as Record<ThresholdMetric, number | null>;
}

export function buildReport(i: ReportInput): Report {
  const c = i.metrics.counters;
  const base: Omit<Report, "thresholds" | "passed"> = {
    scenario: i.scenario,
    started_at: new Date(i.startedAt).toISOString(),
    duration_s: Math.round(i.measuredMs) / 1000,
    blocks: i.blocks,
    counts: {
      ...c,
      commands_lost: Math.max(0, c.commands_sent - c.commands_received - i.commandsInFlight),
      commands_in_flight: i.commandsInFlight,
      commands_put_unanswered_at_stop: i.commandsAbandoned ?? 0,
      callback_devices: i.callbackDevices,
    },
    errors_by_kind: i.metrics.errors_by_kind,
    throttled_by_kind: i.metrics.throttled_by_kind,
    latency_ms: { ingest: i.metrics.ingest, command: i.metrics.command, callback: i.metrics.callback },
    events_per_s: i.measuredMs > 0 ? Math.round((i.measuredAcked / i.measuredMs) * 1e5) / 100 : 0,
    simulator: {
      ...i.load,
      cpu_percent_total: i.load.cpu_percent,
      processes: 1,
      send_window: i.window,
      cpu_us_per_event: i.measuredAcked > 0 ? Math.round(((i.load.cpu_user_ms + i.load.cpu_system_ms) * 1e5) / i.measuredAcked) / 100 : null,
      ...bottleneck(i),
    },
    part: i.part ?? null,
    histograms: i.histograms,
  };
  const thresholds = checkThresholds(i.scenario.thresholds, metricTable(base));
  // A run in which no block could activate tested nothing, whatever the thresholds say.
  return { ...base, thresholds, passed: i.blocks.activated > 0 && thresholds.every((t) => t.passed) };
}

export function writeReport(path: string, report: Report): void {
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
}

/** `41%`, or with several processes `82.5% together, busiest process 43%` (percent of one core). */
function cpuText(sim: Report["simulator"]): string {
  const processes = sim.processes ?? 1;
  if (processes <= 1) return `${sim.cpu_percent}%`;
  return `${sim.cpu_percent_total}% together over ${processes} processes, busiest ${sim.cpu_percent}%`;
}

/**
 * Below this measured window (seconds) a rate or the simulator's load is a quotient of near-zero
 * figures: the summary says "not measured" instead (a run stopped during its start-up measured 0 s).
 */
export const MIN_MEASURED_S = 1;

/**
 * What the errors were, most frequent first (`errors: activate_http_401 1`): the count alone left a
 * user with a mistyped token to guess from "1 errors" and the hint of `FAIL: no block activated`.
 */
function errorKinds(r: Report): string[] {
  const kinds = Object.entries(r.errors_by_kind ?? {}).sort((a, b) => b[1] - a[1]);
  if (kinds.length === 0) return [];
  const shown = kinds.slice(0, 6).map(([k, n]) => `${k} ${n}`);
  return [`errors: ${shown.join(", ")}${kinds.length > 6 ? `, … and ${kinds.length - 6} more kinds` : ""}`];
}

/**
 * Human lines for the end of a headless run (stderr). A run stopped by a signal during its start-up
 * (the report's `interrupted`) says so instead of blaming the server.
 */
export function summaryLines(r: Report): string[] {
  const lat = (name: string, s: Report["latency_ms"]["ingest"]): string =>
    s.count === 0 ? `${name}: no samples` : `${name}: p50 ${ms(s.p50)} p90 ${ms(s.p90)} p99 ${ms(s.p99)} max ${ms(s.max)} ms (${s.count})`;
  const measured = r.duration_s >= MIN_MEASURED_S;
  const startUp = r.interrupted?.during_start_up === true;
  const notMeasured = `not measured (${r.duration_s} s measured${startUp ? ": interrupted during start-up" : ""})`;
  const lines = [
    `blocks ${r.blocks.activated}/${r.blocks.planned} activated${r.blocks.in_flight_at_stop ? `, ${r.blocks.in_flight_at_stop} in flight at the stop` : ""}, events ${r.counts.events_acked}/${r.counts.events_sent} acked, ${r.counts.errors} errors, ${r.counts.throttled ?? 0} throttled, ` +
      (measured ? `${r.events_per_s}/s` : `rate ${notMeasured}`),
    ...errorKinds(r),
    lat("ingest ack", r.latency_ms.ingest),
    lat("command round trip", r.latency_ms.command) +
      (r.counts.commands_put_unanswered_at_stop ? `, ${r.counts.commands_put_unanswered_at_stop} PUT${r.counts.commands_put_unanswered_at_stop === 1 ? "" : "s"} unanswered at the stop` : ""),
    `${lat("callback delivery", r.latency_ms.callback)}, ${r.counts.callbacks_received} deliveries on ${r.counts.callback_devices} devices`,
    measured
      ? `simulator: CPU ${cpuText(r.simulator)} (max ${r.simulator.cpu_percent_max}%, ${r.simulator.cpu_us_per_event ?? "-"} µs/event), loop delay p99 ${ms(r.simulator.loop_delay_p99_ms)} ms; bottleneck: ${r.simulator.bottleneck} (${r.simulator.reason})`
      : `simulator: load and bottleneck ${notMeasured}`,
  ];
  if (startUp) {
    lines.push(`interrupted during start-up, ${r.blocks.activated === 0 ? "before any block activated" : "before the measured time"}: thresholds not checked`);
    return lines;
  }
  if (r.blocks.activated === 0) lines.push("FAIL: no block activated (is the server reachable, and the token a user access token?)");
  for (const t of r.thresholds) lines.push(`threshold ${t.passed ? "ok  " : "FAIL"} ${t.text} (actual ${t.actual ?? "no data"})`);
  return lines;
}
