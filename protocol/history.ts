/** History queries: intervals, folding functions and the data-point time format (spec "Data point"). */

export const FOLD_FNS = ["mean", "sum", "min", "max", "stddev", "ss", "count"] as const;
export type FoldFn = (typeof FOLD_FNS)[number];

export const INTERVAL_UNITS = ["min", "hour", "day", "month", "year"] as const;
export type IntervalUnit = (typeof INTERVAL_UNITS)[number];

export interface Interval {
  count: number;
  unit: IntervalUnit;
}

const UNIT_MS: Record<"min" | "hour" | "day", number> = { min: 60_000, hour: 3_600_000, day: 86_400_000 };

/** Parses `<number><unit>` (e.g. `6hour`, `1day`); null when malformed. */
export function parseInterval(text: string): Interval | null {
  const m = /^([0-9]{1,6})(min|hour|day|month|year)$/.exec(text);
  if (!m) return null;
  const count = Number(m[1]);
  if (count < 1) return null;
  return { count, unit: m[2] as IntervalUnit };
}

/** Bucket width in ms for fixed-width units, null for calendar units (month, year). */
export function fixedWidthMs(i: Interval): number | null {
  return i.unit === "month" || i.unit === "year" ? null : i.count * UNIT_MS[i.unit];
}

/**
 * Epoch ms of the first day of `month` (0-11) of `year`, UTC. Unlike `Date.UTC`, years 0-99 are
 * taken as they are (Date.UTC maps them to 1900-1999), so huge year/month counts align on year 0.
 */
export function utcMonthStart(year: number, month: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, 1);
  return d.getTime();
}

/** Start (epoch ms, UTC) of the bucket holding `ts`. Buckets are aligned to the epoch (UTC). */
export function bucketStart(ts: number, i: Interval): number {
  const w = fixedWidthMs(i);
  if (w !== null) return ts - (ts % w);
  const d = new Date(ts);
  if (i.unit === "year") {
    const y = d.getUTCFullYear();
    return utcMonthStart(y - (y % i.count), 0);
  }
  const idx = d.getUTCFullYear() * 12 + d.getUTCMonth();
  const b = idx - (idx % i.count);
  return utcMonthStart(Math.floor(b / 12), b % 12);
}

/** `YYYY-MM-DDTHH:MM:SS.mmm+0000`, the spec's data point time format. */
export function formatPointTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 23)}+0000`;
}

/** Parses a DA into a number when it is a plain decimal number; null otherwise. */
export function numericValue(da: string | number): number | null {
  if (typeof da === "number") return Number.isFinite(da) ? da : null;
  if (!/^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(da)) return null;
  const n = Number(da);
  return Number.isFinite(n) ? n : null;
}
