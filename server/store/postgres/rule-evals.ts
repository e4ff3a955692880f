/**
 * The durable outbox of rule evaluations (`rule_evals`, written by the ingest transaction in
 * events.ts): a watched reading's evaluation outlives the instance that committed it. Its rows are
 * leased to that instance, which evaluates them at once; a row whose lease lapsed is claimed by
 * another instance. A device's rows are consumed in commit order (a row goes with or after every
 * earlier row of its device), and the jobs of one rule run one at a time in firing order: a job
 * fired behind another instance's job of its rule waits in the store for RuleJobsRepo.takeOver.
 */
import type pg from "pg";
import type { FiringOutcome, RuleEvalRow, RuleEvalsRepo } from "../types.js";
import { q, tx } from "./db.js";

/** The rows were not all this lease's to consume (taken over, or behind an earlier row): rolled back. */
class NotMine extends Error {}

export function ruleEvalsRepo(pool: pg.Pool): RuleEvalsRepo {
  const release = async (lease: string, ids: number[]): Promise<void> => {
    if (ids.length === 0) return;
    await q(pool, "UPDATE rule_evals SET lease_until = 0 WHERE lease = $1 AND id = ANY($2::bigint[])", [lease, ids], "evals.release");
  };
  return {
    async claim(lease, now, leaseMs, limit) {
      // Of each device, its lapsed rows up to the first one still leased elsewhere (commit order).
      const rows = await q<RuleEvalRow>(
        pool,
        `UPDATE rule_evals SET lease = $1, lease_until = $2::bigint + $3::bigint
         WHERE lease_until < $2 AND id IN (
           SELECT id FROM rule_evals x WHERE lease_until < $2
             AND NOT EXISTS (SELECT 1 FROM rule_evals o WHERE o.device_id = x.device_id AND o.id < x.id AND o.lease_until >= $2)
           ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED)
         RETURNING id, device_id, user_id, guid, ts, da, prev, cause`,
        [lease, now, leaseMs, limit],
        "evals.claim",
      );
      // bigint[] comes back as text.
      for (const r of rows) r.cause = r.cause.map(Number);
      return rows.sort((a, b) => a.id - b.id);
    },

    async consume(lease, ids, firings, leaseMs) {
      // Deletes the rows if they are all still this lease's and no earlier row of their devices
      // waits; with firings, also locks their rules (in id order) so that the jobs fired next see
      // every job of those rules committed before (a fresh snapshot per statement).
      const check = `WITH d AS (DELETE FROM rule_evals WHERE id = ANY($2::bigint[]) AND lease = $1 RETURNING device_id, id),
        l AS (SELECT id FROM rules WHERE id = ANY($3::bigint[]) ORDER BY id FOR UPDATE)
        SELECT (SELECT count(*) FROM d)::int AS n, (SELECT count(*) FROM l)::int AS locked,
          EXISTS (SELECT 1 FROM rule_evals o JOIN (SELECT device_id, max(id) AS m FROM d GROUP BY device_id) x
                  ON o.device_id = x.device_id AND o.id < x.m AND NOT (o.id = ANY($2::bigint[]))) AS blocked`;
      const ok = (r: { n: number; blocked: boolean } | undefined): boolean => r !== undefined && r.n === ids.length && !r.blocked;
      if (firings.length === 0) {
        // Nothing to fire: an evaluation that fired nothing is final, whatever else happened.
        await q(pool, check, [lease, ids, []], "evals.consume");
        return [];
      }
      try {
        return await tx(pool, async (c) => {
          const [r] = await q<{ n: number; blocked: boolean }>(c, check, [lease, ids, [...new Set(firings.map((f) => f.ruleId))]], "evals.consume");
          if (!ok(r)) throw new NotMine();
          const out: FiringOutcome[] = [];
          for (const f of firings) {
            // The job waits (lease lapsed at once) when an older job of the rule is another lease's,
            // or lapsed: it runs after that one, wherever RuleJobsRepo.takeOver hands it.
            const [job] = await q<{ id: number; behind: boolean }>(
              c,
              `WITH f AS (
                 UPDATE rules SET last_fired = $2 WHERE id = $1 AND ($3::bigint = 0 OR last_fired IS NULL OR last_fired <= $2::bigint - $3::bigint) RETURNING id
               ), b AS (
                 SELECT EXISTS (SELECT 1 FROM rule_jobs e WHERE e.rule_id = $1 AND (e.lease <> $5 OR e.lease_until < $2)) AS behind
               )
               INSERT INTO rule_jobs (rule_id, fired_at, cause, lease, lease_until)
               SELECT f.id, $2, $4::bigint[], $5, CASE WHEN b.behind THEN 0 ELSE $2::bigint + $6::bigint END FROM f, b
               RETURNING id, lease_until = 0 AS behind`,
              [f.ruleId, f.firedAt, Math.ceil(f.timeoutMs), f.cause, lease, leaseMs],
              "evals.fire",
            );
            out.push(job === undefined ? "refused" : job.behind ? "behind" : job.id);
          }
          return out;
        });
      } catch (err) {
        if (!(err instanceof NotMine)) throw err;
        // Evaluated out of turn, or no longer ours: back to the table, claimed again in order.
        await release(lease, ids);
        return null;
      }
    },

    release,

    async depth() {
      return ((await q<{ n: number }>(pool, "SELECT count(*)::int AS n FROM rule_evals"))[0] as { n: number }).n;
    },
  };
}
