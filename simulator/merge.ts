/**
 * Merging the reports of the parts of one scenario (`--workers` inside one machine, `--shard` over
 * several, `blockkit sim merge`): counts add up, latency histograms are added sample for sample
 * (HdrHistogram, so percentiles of the merge are exact, not averages of percentiles), and the
 * thresholds are evaluated on the merge so a run spread over several runners gets one verdict.
 */
import { Latency } from "./metrics/histogram.js";
import type { Bottleneck, FleetPart, Interrupted, Report } from "./report.js";
import { metricTable } from "./report.js";
import { checkThresholds } from "./scenario/thresholds.js";

export class MergeError extends Error {}

/** One part's figures kept in the merged report. */
export interface PartSummary extends FleetPart {
  blocks: number;
  events_per_s: number;
  cpu_percent: number;
  bottleneck: Bottleneck;
  reason: string;
  /** The part was cut short by a signal (its report's `interrupted`). */
  interrupted: Interrupted | null;
}

export type MergedReport = Report & { parts: PartSummary[] };

function sum(reports: Report[], pick: (r: Report) => number): number {
  return reports.reduce((n, r) => n + pick(r), 0);
}

const max = (values: (number | null)[]): number | null => {
  const v = values.filter((x): x is number => x !== null);
  return v.length === 0 ? null : Math.max(...v);
};

const round2 = (n: number): number => Math.round(n * 100) / 100;

/**
 * Checks that the reports are parts of one scenario and together cover it exactly once; returns
 * the problems (empty when they do).
 */
export function coverageProblems(reports: Report[]): string[] {
  const problems: string[] = [];
  const first = reports[0];
  if (!first) return ["no reports"];
  const key = (r: Report): string => JSON.stringify({ name: r.scenario.name, seed: r.scenario.seed, blocks: r.scenario.blocks, devices: r.scenario.devices.length });
  reports.forEach((r, i) => {
    if (key(r) !== key(first)) problems.push(`report ${i + 1}: a different scenario (${r.scenario.name}, seed ${r.scenario.seed}) than report 1 (${first.scenario.name}, seed ${first.scenario.seed})`);
  });
  // Parts cover the fleet exactly when every block index falls in exactly one of them. Part i/n
  // covers the residues i mod n; over the least common multiple of the counts, count the hits.
  const parts = reports.map((r) => r.part ?? { index: 0, count: 1 });
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  const lcm = parts.reduce((l, p) => (l * p.count) / gcd(l, p.count), 1);
  if (lcm > 1_000_000) return [...problems, "the parts' counts are too unlike to check (their least common multiple passes 1,000,000)"];
  const hits = new Uint16Array(lcm);
  for (const p of parts) for (let i = p.index; i < lcm; i += p.count) hits[i] = (hits[i] ?? 0) + 1;
  const missing = hits.findIndex((h) => h === 0);
  const twice = hits.findIndex((h) => h > 1);
  if (missing >= 0) problems.push(`the parts do not cover the fleet: no report holds blocks with index ${missing} mod ${lcm} (a shard is missing)`);
  if (twice >= 0) problems.push(`the parts overlap: blocks with index ${twice} mod ${lcm} are in more than one report (a shard given twice?)`);
  return problems;
}

/** Merges the reports of the parts of one scenario; throws MergeError when they are not that. */
export function mergeReports(reports: Report[], o: { allowPartial?: boolean } = {}): MergedReport {
  const problems = coverageProblems(reports);
  if (problems.length > 0 && !(o.allowPartial && reports.length > 0 && problems.every((p) => p.startsWith("the parts do not cover")))) {
    throw new MergeError(problems.join("\n"));
  }
  const first = reports[0] as Report;
  const latency = (k: keyof Report["histograms"]): Latency => {
    const l = new Latency();
    for (const r of reports) {
      if (typeof r.histograms?.[k] !== "string") throw new MergeError(`a report without the ${k} histogram (written by an older blockkit?)`);
      l.add(Latency.decode(r.histograms[k]));
    }
    return l;
  };
  const ingest = latency("ingest");
  const command = latency("command");
  const callback = latency("callback");
  const counts = {} as Report["counts"];
  for (const k of Object.keys(first.counts) as (keyof Report["counts"])[]) counts[k] = sum(reports, (r) => r.counts[k] ?? 0);
  const errors: Record<string, number> = {};
  for (const r of reports) for (const [k, v] of Object.entries(r.errors_by_kind)) errors[k] = (errors[k] ?? 0) + v;
  // A report of an older blockkit has no throttled figures (its 429s are among its errors).
  const throttled: Record<string, number> = {};
  for (const r of reports) for (const [k, v] of Object.entries(r.throttled_by_kind ?? {})) throttled[k] = (throttled[k] ?? 0) + v;
  const sims = reports.map((r) => r.simulator);
  const acked = sum(reports, (r) => r.events_per_s * r.duration_s);
  const cpuMs = sum(reports, (r) => r.simulator.cpu_user_ms + r.simulator.cpu_system_ms);
  // The verdict of the part that was limited: the simulator wins over the server over the host.
  const order: Bottleneck[] = ["simulator", "server", "host", "none"];
  const worst = [...sims].sort((a, b) => order.indexOf(a.bottleneck) - order.indexOf(b.bottleneck))[0] as Report["simulator"];
  const base: Omit<MergedReport, "thresholds" | "passed"> = {
    scenario: first.scenario,
    started_at: reports.map((r) => r.started_at).sort()[0] as string,
    duration_s: Math.max(...reports.map((r) => r.duration_s)),
    blocks: {
      planned: sum(reports, (r) => r.blocks.planned),
      activated: sum(reports, (r) => r.blocks.activated),
      failed: sum(reports, (r) => r.blocks.failed),
      in_flight_at_stop: sum(reports, (r) => r.blocks.in_flight_at_stop ?? 0),
    },
    counts,
    errors_by_kind: errors,
    throttled_by_kind: throttled,
    latency_ms: { ingest: ingest.summary(), command: command.summary(), callback: callback.summary() },
    events_per_s: round2(sum(reports, (r) => r.events_per_s)),
    simulator: {
      // Per process: the busiest one (a threshold on sim_cpu_percent means "no process saturated");
      // and all of them together (what the fleet cost). A report of an older blockkit has no total.
      cpu_percent: Math.max(...sims.map((s) => s.cpu_percent)),
      cpu_percent_total: round2(sum(reports, (r) => r.simulator.cpu_percent_total ?? r.simulator.cpu_percent)),
      processes: sum(reports, (r) => r.simulator.processes ?? 1),
      cpu_percent_max: Math.max(...sims.map((s) => s.cpu_percent_max)),
      cpu_user_ms: sum(reports, (r) => r.simulator.cpu_user_ms),
      cpu_system_ms: sum(reports, (r) => r.simulator.cpu_system_ms),
      loop_delay_p50_ms: Math.max(...sims.map((s) => s.loop_delay_p50_ms)),
      loop_delay_p99_ms: Math.max(...sims.map((s) => s.loop_delay_p99_ms)),
      loop_delay_max_ms: Math.max(...sims.map((s) => s.loop_delay_max_ms)),
      answer_wait_ms: max(sims.map((s) => s.answer_wait_ms)),
      answer_wait_max_ms: max(sims.map((s) => s.answer_wait_max_ms)),
      cpu_us_per_event: acked > 0 ? round2((cpuMs * 1000) / acked) : null,
      send_window: {
        ...worst.send_window,
        size: sum(reports, (r) => r.simulator.send_window.size),
        cycles: sum(reports, (r) => r.simulator.send_window.cycles),
        mean_in_flight: round2(sum(reports, (r) => r.simulator.send_window.mean_in_flight)),
      },
      bottleneck: worst.bottleneck,
      reason: reports.length > 1 ? `the most limited of ${reports.length} parts: ${worst.reason}` : worst.reason,
    },
    part: null,
    histograms: { ingest: ingest.encode(), command: command.encode(), callback: callback.encode() },
    parts: reports.map((r) => ({
      ...(r.part ?? { index: 0, count: 1 }),
      blocks: r.blocks.planned,
      events_per_s: r.events_per_s,
      cpu_percent: r.simulator.cpu_percent,
      bottleneck: r.simulator.bottleneck,
      reason: r.simulator.reason,
      interrupted: r.interrupted ?? null,
    })),
    // The first part cut short (during start-up only when every such part was).
    interrupted: mergedInterruption(reports),
  };
  const thresholds = checkThresholds(first.scenario.thresholds, metricTable(base));
  const passed = base.blocks.activated > 0 && thresholds.every((t) => t.passed) && reports.every((r) => r.blocks.activated > 0) && base.interrupted === null;
  return { ...base, thresholds, passed };
}

/** How the merge was cut short: null when no part was; else the first part's signal. */
function mergedInterruption(reports: Report[]): Interrupted | null {
  const cut = reports.map((r) => r.interrupted ?? null).filter((i): i is Interrupted => i !== null);
  if (cut.length === 0) return null;
  return { signal: (cut[0] as Interrupted).signal, during_start_up: cut.every((i) => i.during_start_up) };
}
