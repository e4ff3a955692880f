/**
 * Rule evaluations and rule runs that outlive the process on the embedded store, the same
 * interfaces as on PostgreSQL (postgres/rule-evals.ts, postgres/leases.ts) so that the rule engine
 * has one durable code path. The ingest transaction writes a watched reading's evaluation to
 * `rule_evals` (devices.ts) unleased; the engine claims the rows after the commit, and in one
 * transaction inserts the jobs of the rules they fire and deletes them.
 *
 * Leases on one process: the server is the only process that evaluates and runs rules on its data
 * directory, so a row leased to another lease was left by a process that is gone (killed, or
 * stopped: its rows released), and counts as lapsed at once. A restarted server thus takes over
 * every row at its first poll, without waiting for the dead process's leases to run out.
 */
import type { Database } from "better-sqlite3";
import type { FiringOutcome, RuleEvalRow, RuleEvalsRepo, RuleFiring, RuleJobRow, RuleJobsRepo } from "../types.js";

/** A row that is not leased to `@lease` until after `@now`: a dead process's, released, or lapsed. */
const LAPSED = "(lease IS NOT @lease OR lease_until < @now)";

const toCause = (text: string): number[] => (text === "" ? [] : text.split(",").map(Number));

/** The firing of a rule as a job (RuleJobsRepo.fire, RuleEvalsRepo.consume), in the caller's transaction. */
function firer(db: Database): (f: RuleFiring, lease: string, leaseMs: number, queue: boolean) => FiringOutcome {
  const claim = db.prepare(
    "UPDATE rules SET last_fired = @now WHERE id = @id AND (@t = 0 OR last_fired IS NULL OR last_fired <= @now - @t)",
  );
  const behind = db.prepare(`SELECT 1 FROM rule_jobs WHERE rule_id = @id AND ${LAPSED} LIMIT 1`).pluck();
  const insert = db.prepare(
    "INSERT INTO rule_jobs (rule_id, fired_at, cause, lease, lease_until) VALUES (@id, @now, @cause, @lease, @until)",
  );
  return (f, lease, leaseMs, queue) => {
    const p = { id: f.ruleId, now: f.firedAt, t: Math.ceil(f.timeoutMs), lease };
    if (claim.run(p).changes === 0) return "refused";
    // Behind an older job of the rule that is not running here: it waits for RuleJobsRepo.takeOver.
    const wait = queue && behind.get(p) !== undefined;
    const id = Number(insert.run({ ...p, cause: f.cause.join(","), until: wait ? 0 : f.firedAt + leaseMs }).lastInsertRowid);
    return wait ? "behind" : id;
  };
}

export function ruleEvalsRepo(db: Database): RuleEvalsRepo {
  const claim = db.prepare(
    `UPDATE rule_evals SET lease = @lease, lease_until = @now + @leaseMs
     WHERE id IN (SELECT id FROM rule_evals WHERE ${LAPSED} ORDER BY id LIMIT @limit)
     RETURNING id, device_id, user_id, guid, ts, da, prev, cause`,
  );
  const remove = db.prepare("DELETE FROM rule_evals WHERE id = ? AND lease = ? RETURNING device_id");
  const earlier = db.prepare("SELECT 1 FROM rule_evals WHERE device_id = ? AND id < ? LIMIT 1").pluck();
  const releaseOne = db.prepare("UPDATE rule_evals SET lease_until = 0 WHERE id = ? AND lease = ?");
  const depth = db.prepare("SELECT count(*) FROM rule_evals").pluck();
  const fire = firer(db);

  const claimTx = db.transaction((p: Record<string, unknown>) => claim.all(p) as (Omit<RuleEvalRow, "cause"> & { cause: string })[]);
  const releaseTx = db.transaction((lease: string, ids: number[]) => {
    for (const id of ids) releaseOne.run(id, lease);
  });
  /** Deletes the rows; false (rolled back by the caller) unless all were this lease's, with no earlier row of their devices waiting. */
  const take = (lease: string, ids: number[]): boolean => {
    const last = new Map<number, number>();
    for (const id of ids) {
      const row = remove.all(id, lease)[0] as { device_id: number } | undefined;
      if (!row) return false;
      last.set(row.device_id, Math.max(id, last.get(row.device_id) ?? 0));
    }
    for (const [device, id] of last) if (earlier.get(device, id) !== undefined) return false;
    return true;
  };
  class NotMine extends Error {}
  const consumeTx = db.transaction((lease: string, ids: number[], firings: RuleFiring[], leaseMs: number): FiringOutcome[] => {
    if (!take(lease, ids)) throw new NotMine();
    return firings.map((f) => fire(f, lease, leaseMs, true));
  });
  const dropTx = db.transaction((lease: string, ids: number[]) => {
    // Nothing fired: the evaluation is final whatever else happened (as on PostgreSQL).
    for (const id of ids) remove.all(id, lease);
  });

  return {
    async claim(lease, now, leaseMs, limit) {
      const rows = claimTx.immediate({ lease, now, leaseMs, limit });
      return rows.map((r) => ({ ...r, cause: toCause(r.cause) })).sort((a, b) => a.id - b.id);
    },
    async consume(lease, ids, firings, leaseMs) {
      if (firings.length === 0) {
        dropTx.immediate(lease, ids);
        return [];
      }
      try {
        return consumeTx.immediate(lease, ids, firings, leaseMs);
      } catch (err) {
        if (!(err instanceof NotMine)) throw err;
        releaseTx.immediate(lease, ids);
        return null;
      }
    },
    async release(lease, ids) {
      if (ids.length > 0) releaseTx.immediate(lease, ids);
    },
    async depth() {
      return depth.get() as number;
    },
  };
}

const JOB_COLUMNS = "id, rule_id, fired_at, cause, step, steps, sleep_until";

export function ruleJobsRepo(db: Database): RuleJobsRepo {
  const fire = firer(db);
  const fireTx = db.transaction((f: RuleFiring, lease: string, leaseMs: number) => fire(f, lease, leaseMs, false));
  const progress = db.prepare("UPDATE rule_jobs SET step = ?, steps = ?, sleep_until = ? WHERE id = ? AND lease = ?");
  const finish = db.prepare("DELETE FROM rule_jobs WHERE id = ?");
  const renewOne = db.prepare("UPDATE rule_jobs SET lease_until = ? WHERE id = ? AND lease = ?");
  const renewTx = db.transaction((lease: string, ids: number[], until: number) => {
    for (const id of ids) renewOne.run(until, id, lease);
  });
  // Of each rule only its oldest job: a rule's jobs run one at a time, in firing order.
  const takeOver = db.prepare(
    `UPDATE rule_jobs SET lease = @lease, lease_until = @now + @leaseMs
     WHERE id IN (SELECT id FROM rule_jobs j WHERE ${LAPSED}
       AND NOT EXISTS (SELECT 1 FROM rule_jobs e WHERE e.rule_id = j.rule_id AND e.id < j.id) ORDER BY id LIMIT @limit)
     RETURNING ${JOB_COLUMNS}`,
  );
  const takeOverTx = db.transaction(
    (p: Record<string, unknown>) => takeOver.all(p) as (Omit<RuleJobRow, "cause" | "steps"> & { cause: string; steps: string })[],
  );
  return {
    async fire(ruleId, now, timeoutMs, cause, lease, leaseMs) {
      const out = fireTx.immediate({ ruleId, firedAt: now, timeoutMs, cause }, lease, leaseMs);
      return typeof out === "number" ? out : null;
    },
    async progress(id, lease, step, steps, sleepUntil) {
      return progress.run(step, JSON.stringify(steps), sleepUntil, id, lease).changes > 0;
    },
    async finish(id) {
      finish.run(id);
    },
    async renew(lease, ids, now, leaseMs) {
      if (ids.length > 0) renewTx.immediate(lease, ids, now + leaseMs);
    },
    async takeOver(lease, now, leaseMs, limit) {
      const rows = takeOverTx.immediate({ lease, now, leaseMs, limit });
      return rows
        .map((r) => ({ ...r, cause: toCause(r.cause), steps: JSON.parse(r.steps) as unknown[] }))
        .sort((a, b) => a.id - b.id);
    },
  };
}
