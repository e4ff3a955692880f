/**
 * History folding in SQL on PostgreSQL, bucketed exactly as on SQLite (sqlite/history.ts): fixed
 * widths aligned to the epoch, month and year buckets on the UTC calendar, `count` over every
 * reading and the other functions over numeric ones. Used for readings and sub-device actuations.
 */
import type pg from "pg";
import { fixedWidthMs, utcMonthStart } from "../../../protocol/history.js";
import { FOLD_AGGREGATES } from "../sql.js";
import type { HistoryPoint, HistoryQuery, HistoryRepo } from "../types.js";
import { q } from "./db.js";

const AGG = FOLD_AGGREGATES;

const UTC = "(to_timestamp(ts / 1000) AT TIME ZONE 'UTC')";
const YEAR = `extract(year FROM ${UTC})::bigint`;
const MONTH_INDEX = `(${YEAR} * 12 + extract(month FROM ${UTC})::bigint - 1)`;

/**
 * Folds `table` (device or sub-device rows selected by `where`, with `ts` and, for readings, `num`)
 * into the query's buckets. $1..$3 are the id, from and to; $4 the width or the count of months/years.
 */
export async function fold(
  pool: pg.Pool,
  table: string,
  idColumn: string,
  agg: string,
  numericOnly: boolean,
  id: number,
  q0: Omit<HistoryQuery, "fn">,
): Promise<HistoryPoint[]> {
  const interval = q0.interval;
  if (interval === null) throw new TypeError("fold needs an interval");
  const w = fixedWidthMs(interval);
  const kind = w !== null ? "fixed" : interval.unit === "year" ? "year" : "month";
  const bucket = kind === "fixed" ? "(ts - ts % $4::bigint)" : kind === "month" ? `(${MONTH_INDEX} / $4::bigint) * $4::bigint` : `(${YEAR} / $4::bigint) * $4::bigint`;
  const rows = await q<{ b: number; v: number }>(
    pool,
    `SELECT ${bucket} AS b, ${agg} AS v FROM ${table}
     WHERE ${idColumn} = $1 AND ts >= $2 AND ts <= $3 ${numericOnly ? "AND num IS NOT NULL" : ""}
     GROUP BY b ORDER BY b`,
    [id, q0.from, q0.to, w ?? interval.count],
    `fold:${table}:${kind}:${agg}:${numericOnly}`,
  );
  if (kind === "fixed") return rows.map((r) => ({ t: r.b, v: r.v }));
  if (kind === "year") return rows.map((r) => ({ t: utcMonthStart(r.b, 0), v: r.v }));
  return rows.map((r) => ({ t: utcMonthStart(Math.floor(r.b / 12), r.b % 12), v: r.v }));
}

export function historyRepo(pool: pg.Pool): HistoryRepo {
  return {
    async count(deviceId, from, to) {
      const [r] = await q<{ n: number }>(pool, "SELECT count(*) AS n FROM readings WHERE device_id = $1 AND ts >= $2 AND ts <= $3", [deviceId, from, to], "history.count");
      return (r as { n: number }).n;
    },
    async query(deviceId, hq) {
      if (hq.interval === null) {
        const rows = await q<{ ts: number; num: number | null; da: string }>(
          pool,
          "SELECT ts, num, da FROM readings WHERE device_id = $1 AND ts >= $2 AND ts <= $3 ORDER BY ts, seq",
          [deviceId, hq.from, hq.to],
          "history.raw",
        );
        return rows.map((r) => ({ t: r.ts, v: r.num ?? r.da }));
      }
      return fold(pool, "readings", "device_id", AGG[hq.fn], hq.fn !== "count", deviceId, hq);
    },
  };
}
