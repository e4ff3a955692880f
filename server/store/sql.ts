/**
 * SQL text shared by both store implementations (sqlite/, postgres/), which speak the same SQL
 * here and differ only in how a statement names its parameters.
 */
import type { FoldFn } from "../../protocol/history.js";

/** The aggregate of each history fold over a bucket's `num` column (SQLite registers stddev_pop). */
export const FOLD_AGGREGATES: Readonly<Record<FoldFn, string>> = {
  mean: "avg(num)",
  sum: "sum(num)",
  min: "min(num)",
  max: "max(num)",
  ss: "sum(num * num)",
  stddev: "stddev_pop(num)",
  count: "count(*)",
};

const TOKEN_FIELDS = ["hash", "user_id", "kind", "node_id", "client_id"] as const;
export type TokenFieldMatch = Partial<Record<(typeof TOKEN_FIELDS)[number], unknown>>;

/**
 * The WHERE clause of a token match: one `field = <param>` per field given, `param(n)` naming the
 * n-th parameter (`?` for SQLite, `$n` for PostgreSQL).
 */
export function tokenWhere(match: TokenFieldMatch, param: (n: number) => string): { sql: string; args: unknown[] } {
  const parts: string[] = [];
  const args: unknown[] = [];
  for (const field of TOKEN_FIELDS) {
    if (match[field] === undefined) continue;
    args.push(match[field]);
    parts.push(`${field} = ${param(args.length)}`);
  }
  if (parts.length === 0) throw new TypeError("a token match needs at least one field");
  return { sql: parts.join(" AND "), args };
}
