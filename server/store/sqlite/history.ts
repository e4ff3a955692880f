/**
 * History folding in SQL: one GROUP BY over the (device_id, ts, num) index, never every row in JS.
 * Buckets are aligned in UTC; month and year buckets follow the calendar.
 */
import type { Database } from "better-sqlite3";
import type { FoldFn } from "../../../protocol/history.js";
import { fixedWidthMs, utcMonthStart } from "../../../protocol/history.js";
import { FOLD_AGGREGATES } from "../sql.js";
import type { HistoryPoint, HistoryQuery, HistoryRepo } from "../types.js";
import type { ReadingsStaging } from "./staging.js";

const AGG = FOLD_AGGREGATES;

const YEAR = "CAST(strftime('%Y', ts / 1000, 'unixepoch') AS INTEGER)";
const MONTH_INDEX = `(${YEAR} * 12 + CAST(strftime('%m', ts / 1000, 'unixepoch') AS INTEGER) - 1)`;

/** Registers the population standard deviation aggregate (Welford's method, numerically stable). */
export function registerFunctions(db: Database): void {
  db.aggregate("stddev_pop", {
    start: () => [0, 0, 0] as [number, number, number],
    step: (acc: [number, number, number], x: number | null) => {
      if (x === null) return acc;
      const n = acc[0] + 1;
      const delta = x - acc[1];
      const mean = acc[1] + delta / n;
      return [n, mean, acc[2] + delta * (x - mean)] as [number, number, number];
    },
    result: (acc: [number, number, number]) => (acc[0] === 0 ? null : Math.sqrt(acc[2] / acc[0])),
  });
}

export function historyRepo(db: Database, staging: ReadingsStaging): HistoryRepo {
  const count = db
    .prepare("SELECT count(*) FROM readings WHERE device_id = ? AND ts >= ? AND ts <= ?")
    .pluck();
  const raw = db.prepare(
    "SELECT ts, num, da FROM readings WHERE device_id = ? AND ts >= ? AND ts <= ? ORDER BY ts, rowid",
  );
  const folded = new Map<string, ReturnType<Database["prepare"]>>();

  function foldStatement(kind: "fixed" | "month" | "year", fn: FoldFn): ReturnType<Database["prepare"]> {
    const key = `${kind}:${fn}`;
    let stmt = folded.get(key);
    if (!stmt) {
      // better-sqlite3 binds JS numbers as REAL: cast @n, or `/` divides without truncating.
      const n = "CAST(@n AS INTEGER)";
      const bucket =
        kind === "fixed" ? "(ts - ts % @w)" : kind === "month" ? `(${MONTH_INDEX} / ${n}) * ${n}` : `(${YEAR} / ${n}) * ${n}`;
      const numeric = fn === "count" ? "" : "AND num IS NOT NULL";
      stmt = db.prepare(
        `SELECT ${bucket} AS b, ${AGG[fn]} AS v FROM readings
         WHERE device_id = @id AND ts >= @from AND ts <= @to ${numeric}
         GROUP BY b ORDER BY b`,
      );
      folded.set(key, stmt);
    }
    return stmt;
  }

  return {
    async count(deviceId, from, to) {
      staging.flush();
      return count.get(deviceId, from, to) as number;
    },
    async query(deviceId: number, q: HistoryQuery): Promise<HistoryPoint[]> {
      staging.flush();
      if (q.interval === null) {
        const rows = raw.all(deviceId, q.from, q.to) as { ts: number; num: number | null; da: string }[];
        return rows.map((r) => ({ t: r.ts, v: r.num ?? r.da }));
      }
      const w = fixedWidthMs(q.interval);
      const args = { id: deviceId, from: q.from, to: q.to };
      if (w !== null) {
        const rows = foldStatement("fixed", q.fn).all({ ...args, w }) as { b: number; v: number }[];
        return rows.map((r) => ({ t: r.b, v: r.v }));
      }
      const n = q.interval.count;
      if (q.interval.unit === "year") {
        const rows = foldStatement("year", q.fn).all({ ...args, n }) as { b: number; v: number }[];
        return rows.map((r) => ({ t: utcMonthStart(r.b, 0), v: r.v }));
      }
      const rows = foldStatement("month", q.fn).all({ ...args, n }) as { b: number; v: number }[];
      return rows.map((r) => ({ t: utcMonthStart(Math.floor(r.b / 12), r.b % 12), v: r.v }));
    },
  };
}
