/**
 * Work that must survive the loss of the instance doing it, leased in tables: callback deliveries
 * (the outbox, written by the ingest transaction in events.ts) and rule runs in progress. A lease
 * is a token and a time (`lease`, `lease_until`); a row whose lease lapsed is free for any
 * instance. Claims are single UPDATEs: under READ COMMITTED an UPDATE that waited for a row lock
 * checks its WHERE again on the new row, so two instances never lease one row together.
 */
import type pg from "pg";
import type { CallbackOutbox, OutboxDelivery, RuleJobRow, RuleJobsRepo } from "../types.js";
import { q } from "./db.js";

export { ruleEvalsRepo } from "./rule-evals.js";

export function outboxRepo(pool: pg.Pool): CallbackOutbox {
  return {
    async claim(lease, now, leaseMs, limit, perUser, busy) {
      // Heads of each device's queue only: the next delivery of a device becomes claimable once the
      // one before it is gone, so a device has one attempt at a time and keeps its order. The heads
      // come from a loose index scan of (device_id, id): one probe per device with deliveries
      // waiting, however long their queues (a DISTINCT ON read the whole table at every claim).
      const rows = await q<OutboxDelivery>(
        pool,
        `WITH RECURSIVE h AS (
           (SELECT device_id, id FROM callback_outbox ORDER BY device_id, id LIMIT 1)
           UNION ALL
           SELECT n.device_id, n.id FROM h, LATERAL (
             SELECT device_id, id FROM callback_outbox WHERE device_id > h.device_id ORDER BY device_id, id LIMIT 1
           ) n
         ), heads AS (
           SELECT o.id, o.user_id, o.next_at, o.lease_until FROM h JOIN callback_outbox o ON o.id = h.id
         ), due AS (
           SELECT id, row_number() OVER (PARTITION BY user_id ORDER BY id) AS n FROM heads
           WHERE next_at <= $2 AND (lease_until IS NULL OR lease_until < $2) AND NOT (user_id = ANY($6::bigint[]))
         ), picked AS (
           SELECT id FROM due WHERE n <= $5 ORDER BY id LIMIT $4
         )
         UPDATE callback_outbox o SET lease = $1, lease_until = $2::bigint + $3::bigint
         FROM picked, devices d, callbacks cb
         WHERE o.id = picked.id AND (o.lease_until IS NULL OR o.lease_until < $2) AND d.id = o.device_id AND cb.device_id = o.device_id
         RETURNING o.id, o.delivery::text AS delivery, o.device_id, o.user_id, o.attempts, d.guid, d.g, d.v, d.d, d.node_id, o.da, o.ts, cb.url, cb.secret`,
        [lease, now, leaseMs, limit, perUser, busy],
        "outbox.claim",
      );
      // Oldest first (RETURNING has no order).
      return rows.sort((a, b) => Number(a.id) - Number(b.id));
    },
    async remove(ids) {
      if (ids.length === 0) return;
      await q(pool, "DELETE FROM callback_outbox WHERE id = ANY($1::bigint[])", [ids], "outbox.remove");
    },
    async retry(id, lease, attempts, nextAt) {
      await q(pool, "UPDATE callback_outbox SET attempts = $3, next_at = $4, lease = NULL, lease_until = NULL WHERE id = $1 AND lease = $2", [id, lease, attempts, nextAt], "outbox.retry");
    },
    async trim(maxPerDevice, maxPerUser, maxTotal, now) {
      // The newest deliveries beyond each bound go (a full queue drops new events). Every row counts
      // toward the bounds, the one in flight too; only rows not leased are dropped.
      const rows = await q<{ reason: string; n: number }>(
        pool,
        `WITH a AS (
           SELECT id, user_id, lease_until, row_number() OVER (PARTITION BY device_id ORDER BY id) AS n FROM callback_outbox
         ), b AS (
           SELECT id, lease_until, row_number() OVER (PARTITION BY user_id ORDER BY id) AS n FROM a WHERE n <= $1
         ), c AS (
           SELECT id, lease_until, row_number() OVER (ORDER BY id) AS n FROM b WHERE n <= $2
         ), victims AS (
           SELECT id, 'device' AS reason FROM a WHERE n > $1 AND (lease_until IS NULL OR lease_until < $4)
           UNION ALL SELECT id, 'user' FROM b WHERE n > $2 AND (lease_until IS NULL OR lease_until < $4)
           UNION ALL SELECT id, 'total' FROM c WHERE n > $3 AND (lease_until IS NULL OR lease_until < $4)
         ), gone AS (
           DELETE FROM callback_outbox o USING victims v WHERE o.id = v.id RETURNING v.reason
         )
         SELECT reason, count(*)::int AS n FROM gone GROUP BY reason`,
        [maxPerDevice, maxPerUser, maxTotal, now],
        "outbox.trim",
      );
      const n = (reason: string): number => rows.find((r) => r.reason === reason)?.n ?? 0;
      return { device: n("device"), user: n("user"), total: n("total") };
    },
    async renew(lease, ids, now, leaseMs) {
      if (ids.length === 0) return;
      await q(pool, "UPDATE callback_outbox SET lease_until = $3::bigint + $4::bigint WHERE lease = $1 AND id = ANY($2::bigint[])", [lease, ids, now, leaseMs], "outbox.renew");
    },
    async depth() {
      return ((await q<{ n: number }>(pool, "SELECT count(*)::int AS n FROM callback_outbox"))[0] as { n: number }).n;
    },
  };
}

const JOB_COLUMNS = "id, rule_id, fired_at, cause, step, steps, sleep_until";

export function ruleJobsRepo(pool: pg.Pool): RuleJobsRepo {
  return {
    async fire(ruleId, now, timeoutMs, cause, lease, leaseMs) {
      const [row] = await q<{ id: number }>(
        pool,
        `WITH f AS (
           UPDATE rules SET last_fired = $2 WHERE id = $1 AND ($3::bigint = 0 OR last_fired IS NULL OR last_fired <= $2::bigint - $3::bigint) RETURNING id
         )
         INSERT INTO rule_jobs (rule_id, fired_at, cause, lease, lease_until) SELECT id, $2, $4::bigint[], $5, $2::bigint + $6::bigint FROM f RETURNING id`,
        [ruleId, now, Math.ceil(timeoutMs), cause, lease, leaseMs],
        "jobs.fire",
      );
      return row?.id ?? null;
    },
    async progress(id, lease, step, steps, sleepUntil) {
      const rows = await q(
        pool,
        "UPDATE rule_jobs SET step = $3, steps = $4::jsonb, sleep_until = $5 WHERE id = $1 AND lease = $2 RETURNING 1",
        [id, lease, step, JSON.stringify(steps), sleepUntil],
        "jobs.progress",
      );
      return rows.length > 0;
    },
    async finish(id) {
      await q(pool, "DELETE FROM rule_jobs WHERE id = $1", [id], "jobs.finish");
    },
    async renew(lease, ids, now, leaseMs) {
      if (ids.length === 0) return;
      await q(pool, "UPDATE rule_jobs SET lease_until = $3::bigint + $4::bigint WHERE lease = $1 AND id = ANY($2::bigint[])", [lease, ids, now, leaseMs], "jobs.renew");
    },
    async takeOver(lease, now, leaseMs, limit) {
      const rows = await q<RuleJobRow>(
        pool,
        `UPDATE rule_jobs SET lease = $1, lease_until = $2::bigint + $3::bigint
         WHERE lease_until < $2 AND id IN (
           SELECT id FROM rule_jobs j WHERE lease_until < $2
             AND NOT EXISTS (SELECT 1 FROM rule_jobs e WHERE e.rule_id = j.rule_id AND e.id < j.id)
           ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED)
         RETURNING ${JOB_COLUMNS}`,
        [lease, now, leaseMs, limit],
        "jobs.takeOver",
      );
      // bigint[] comes back as text.
      for (const r of rows) r.cause = r.cause.map(Number);
      return rows;
    },
  };
}
