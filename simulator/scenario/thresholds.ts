/**
 * Pass/fail thresholds: `<metric> <op> <number>`, e.g. `p99_command_ms < 50` or `errors == 0`.
 * Parsed when the scenario is loaded (a typo fails before the run, not after it) and checked
 * against the report's flat metric table at the end.
 */

export const THRESHOLD_METRICS = [
  "events_sent",
  "events_acked",
  "events_per_s",
  "errors",
  "error_rate",
  /** Answers 429 that were asked again (backpressure; never in `errors`). */
  "throttled",
  "commands_sent",
  "commands_received",
  "commands_lost",
  "callbacks_received",
  ...["ingest", "command", "callback"].flatMap((k) => ["p50", "p90", "p99", "max"].map((p) => `${p}_${k}_ms`)),
  "sim_cpu_percent",
  "sim_cpu_percent_total",
  "loop_delay_p99_ms",
] as const;

export type ThresholdMetric = (typeof THRESHOLD_METRICS)[number];

const OPS = ["<=", ">=", "==", "!=", "<", ">"] as const;
type Op = (typeof OPS)[number];

export interface Threshold {
  text: string;
  metric: ThresholdMetric;
  op: Op;
  value: number;
}

export interface ThresholdResult extends Threshold {
  actual: number | null;
  passed: boolean;
}

/** Parses one threshold; throws an Error naming what is wrong. */
export function parseThreshold(text: string): Threshold {
  const m = /^\s*([a-z0-9_]+)\s*(<=|>=|==|!=|<|>)\s*(-?\d+(?:\.\d+)?)\s*$/.exec(text);
  if (!m) throw new Error(`"${text}" is not "<metric> <op> <number>" (op one of ${OPS.join(" ")})`);
  const metric = m[1] as string;
  if (!(THRESHOLD_METRICS as readonly string[]).includes(metric)) {
    throw new Error(`unknown metric "${metric}"; known: ${THRESHOLD_METRICS.join(", ")}`);
  }
  return { text: text.trim(), metric: metric as ThresholdMetric, op: m[2] as Op, value: Number(m[3]) };
}

function holds(actual: number, op: Op, value: number): boolean {
  switch (op) {
    case "<":
      return actual < value;
    case "<=":
      return actual <= value;
    case ">":
      return actual > value;
    case ">=":
      return actual >= value;
    case "==":
      return actual === value;
    case "!=":
      return actual !== value;
  }
}

/**
 * Checks thresholds against the metric table. A metric with no sample (null, e.g. a callback
 * percentile when no callback arrived) fails its threshold: a run cannot pass on missing data.
 */
export function checkThresholds(thresholds: Threshold[], metrics: Record<ThresholdMetric, number | null>): ThresholdResult[] {
  return thresholds.map((t) => {
    const actual = metrics[t.metric] ?? null;
    return { ...t, actual, passed: actual !== null && holds(actual, t.op, t.value) };
  });
}
