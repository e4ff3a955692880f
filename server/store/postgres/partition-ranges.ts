/**
 * The time ranges of the `readings` partitions (epoch ms, UTC): the buckets of each partition
 * interval (a day; a week from Monday 00:00 UTC; a calendar month), names, and the gaps that a
 * bucket leaves between the partitions that exist, so that partitions of different intervals (a
 * database moved from months to days) never overlap. Pure functions; partitions.ts applies them.
 */
import { utcMonthStart } from "../../../protocol/history.js";

export const PARTITION_INTERVALS = ["day", "week", "month"] as const;
export type PartitionInterval = (typeof PARTITION_INTERVALS)[number];

/** [from, to): a partition's bounds. */
export type Range = readonly [number, number];

const DAY = 86_400_000;

/** How many buckets after the current one the server keeps created: about a week or more of slack. */
export const AHEAD: Record<PartitionInterval, number> = { day: 7, week: 2, month: 2 };

export function isPartitionInterval(v: string): v is PartitionInterval {
  return (PARTITION_INTERVALS as readonly string[]).includes(v);
}

/** The bucket of `interval` that holds `ts`. */
export function bucketOf(interval: PartitionInterval, ts: number): Range {
  const day = Math.floor(ts / DAY);
  if (interval === "day") return [day * DAY, (day + 1) * DAY];
  if (interval === "week") {
    // 1970-01-01 was a Thursday: (day + 3) mod 7 is 0 on Mondays.
    const monday = day - (((day + 3) % 7) + 7) % 7;
    return [monday * DAY, (monday + 7) * DAY];
  }
  const d = new Date(ts);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  return [utcMonthStart(y, m), utcMonthStart(m === 11 ? y + 1 : y, (m + 1) % 12)];
}

/** The current bucket and the AHEAD ones after it. */
export function aheadOf(interval: PartitionInterval, now: number): Range[] {
  const out: Range[] = [bucketOf(interval, now)];
  for (let i = 0; i < AHEAD[interval]; i++) out.push(bucketOf(interval, (out[out.length - 1] as Range)[1]));
  return out;
}

/** Parts of `want` that no range of `have` covers (`have` in any order, not overlapping). */
export function gaps(want: Range, have: readonly Range[]): Range[] {
  const out: Range[] = [];
  let at = want[0];
  for (const [from, to] of [...have].sort((a, b) => a[0] - b[0])) {
    if (to <= at || from >= want[1]) continue;
    if (from > at) out.push([at, from]);
    at = Math.max(at, to);
    if (at >= want[1]) break;
  }
  if (at < want[1]) out.push([at, want[1]]);
  return out;
}

const pad = (n: number, w: number): string => String(n).padStart(w, "0");

/**
 * `readings_pYYYYMM` for a whole calendar month (the names of the first, monthly, partitions),
 * else `readings_pYYYYMMDD` of its first day, with `_HHMMSS` if it does not start at midnight
 * (partitions never overlap, so the start names one).
 */
export function partitionName([from, to]: Range): string {
  const d = new Date(from);
  const ym = `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1, 2)}`;
  const month = bucketOf("month", from);
  if (month[0] === from && month[1] === to) return `readings_p${ym}`;
  const time = from % DAY === 0 ? "" : `_${pad(d.getUTCHours(), 2)}${pad(d.getUTCMinutes(), 2)}${pad(d.getUTCSeconds(), 2)}`;
  return `readings_p${ym}${pad(d.getUTCDate(), 2)}${time}`;
}

/** A partition's bounds from `pg_get_expr(relpartbound)`, e.g. FOR VALUES FROM ('1') TO ('2'); null for another form. */
export function parseBound(expr: string): Range | null {
  const m = /^FOR VALUES FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)$/.exec(expr.trim());
  return m ? [Number(m[1]), Number(m[2])] : null;
}
