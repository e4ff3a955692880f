/**
 * Callback deliveries that outlive the process on the embedded store: the CallbackOutbox that
 * PostgreSQL implements for several instances (postgres/leases.ts), so that the dispatcher has one
 * durable code path (services/automation/callbacks.ts). The ingest transaction writes a reading's
 * delivery to `callback_outbox` when its device has a callback (devices.ts), on the ingest thread
 * as on the main thread; the dispatcher leases the heads of the device queues after the commit,
 * each with the deliveries after it (a prefix of the device's queue, sent in order by this process).
 *
 * Leases on one process, as for rule evaluations (rule-evals.ts): the server is the only process
 * that delivers callbacks from its data directory, so a row leased to another lease was left by a
 * process that is gone (killed, or stopped: its rows released) and counts as lapsed at once. A
 * restarted server thus sends an acknowledged event's delivery at its first claim, without waiting
 * for the dead process's lease to run out.
 */
import type { Database } from "better-sqlite3";
import type { CallbackOutbox, OutboxDelivery } from "../types.js";
import type { MainWriter } from "./writer.js";

/**
 * Deliveries leased after each head at most: enough for the next attempts of a device to start
 * without waiting for a claim, few enough that a claim reads a few rows per device, not its queue.
 */
const FOLLOWERS = 3;

/** A row that is not leased to `@lease` until after `@now`: a dead process's, released, retried, or lapsed. */
const FREE = "(o.lease IS NOT @lease OR o.lease_until < @now)";

/**
 * The dispatcher's bookkeeping (leases, removals, retries) is committed without waiting for the
 * disk: `synchronous=NORMAL` for its transactions alone. In WAL mode such a commit survives a
 * process kill (the kernel has it) but not a power cut; losing one there costs a delivery sent
 * again with the same X-Blockkit-Delivery, or a retry counted once less. The rows themselves come
 * with their events' durable commits. With FULL, each of these transactions waited for an fsync on
 * the event loop: ingest with a callback on each of 64 devices fell from 10,001 to 714 requests/s
 * in a first run. With an ingest thread the transaction is the MainWriter's (its turn at the lock,
 * writer.ts); else one of its own here.
 */
function bookkeeping(db: Database, writer: MainWriter | null): <T>(fn: () => T) => Promise<T> {
  if (writer) return (fn) => writer.run(fn, true);
  return async (fn) => {
    const level = db.pragma("synchronous", { simple: true }) as number;
    const tx = db.transaction(fn);
    if (level <= 1) return tx.immediate();
    db.pragma("synchronous = NORMAL");
    try {
      return tx.immediate();
    } finally {
      db.pragma(`synchronous = ${level}`);
    }
  };
}

/**
 * Every method is called as it is (index.ts READS): reads need no turn at the write lock, and the
 * writes take theirs through `writer` (when there is an ingest thread) only when there is something
 * to write.
 */
export function outboxRepo(db: Database, writer: MainWriter | null): CallbackOutbox {
  const write = bookkeeping(db, writer);
  // The head of each device's queue, due and free, with what its POST needs; users with no free
  // slot left out; oldest first. The devices with deliveries waiting are walked through the
  // (device_id, id) index, one seek each, however long their queues.
  const heads = db.prepare(
    `WITH RECURSIVE dev(id) AS (
       SELECT min(device_id) FROM callback_outbox
       UNION ALL
       SELECT (SELECT min(device_id) FROM callback_outbox WHERE device_id > dev.id) FROM dev WHERE dev.id IS NOT NULL
     )
     SELECT o.id, o.delivery, o.device_id, o.user_id, o.attempts, d.guid, d.g, d.v, d.d, d.node_id, o.da, o.ts, cb.url, cb.secret
     FROM dev
     JOIN callback_outbox o ON o.id = (SELECT min(id) FROM callback_outbox WHERE device_id = dev.id)
     JOIN devices d ON d.id = o.device_id
     JOIN callbacks cb ON cb.device_id = o.device_id
     WHERE o.next_at <= @now AND ${FREE} AND o.user_id NOT IN (SELECT value FROM json_each(@busy))
     ORDER BY o.id`,
  );
  const leaseOne = db.prepare(
    "UPDATE callback_outbox AS o SET lease = @lease, lease_until = @until WHERE id = @id AND " + FREE,
  );
  const remove = db.prepare("DELETE FROM callback_outbox WHERE id = ?");
  const retry = db.prepare("UPDATE callback_outbox SET attempts = ?, next_at = ?, lease = NULL, lease_until = 0 WHERE id = ? AND lease = ?");
  const renewOne = db.prepare("UPDATE callback_outbox SET lease_until = ? WHERE id = ? AND lease = ?");
  const depth = db.prepare("SELECT count(*) FROM callback_outbox").pluck();
  // The newest deliveries beyond each bound go, as PostgreSQL's trim: every row counts toward the
  // bounds, only rows not leased (not in flight) are dropped.
  const trim = db.prepare(
    `WITH a AS (
       SELECT id, user_id, lease_until, row_number() OVER (PARTITION BY device_id ORDER BY id) AS n FROM callback_outbox
     ), b AS (
       SELECT id, lease_until, row_number() OVER (PARTITION BY user_id ORDER BY id) AS n FROM a WHERE n <= @device
     ), c AS (
       SELECT id, lease_until, row_number() OVER (ORDER BY id) AS n FROM b WHERE n <= @user
     )
     SELECT id, 'device' AS reason FROM a WHERE n > @device AND lease_until < @now
     UNION ALL SELECT id, 'user' FROM b WHERE n > @user AND lease_until < @now
     UNION ALL SELECT id, 'total' FROM c WHERE n > @total AND lease_until < @now`,
  );

  // The deliveries after a head, for the prefix of its device's queue leased with it.
  const after = db.prepare(
    `SELECT id, delivery, device_id, user_id, attempts, da, ts FROM callback_outbox
     WHERE device_id = @device AND id > @id AND next_at <= @now ORDER BY id LIMIT @limit`,
  );

  // Read first, outside a write transaction: most claims find nothing to lease (every head in
  // flight, or its user busy) and then take no write lock. The one process is the only claimer, so
  // the rows read are leased as read (the UPDATE checks again all the same). Of each device whose
  // head is due and free, a prefix of its queue: the candidates are taken oldest first across
  // devices, which keeps each device's share a prefix (its rows are in id order).
  const pick = (lease: string, now: number, limit: number, perUser: number, busy: number[]): OutboxDelivery[] => {
    const candidates: OutboxDelivery[] = [];
    for (const head of heads.all({ lease, now, busy: JSON.stringify(busy) }) as OutboxDelivery[]) {
      candidates.push(head);
      for (const r of after.all({ device: head.device_id, id: head.id, now, limit: Math.min(perUser - 1, FOLLOWERS) }) as OutboxDelivery[]) {
        candidates.push({ ...head, ...r });
      }
    }
    candidates.sort((a, b) => a.id - b.id);
    const out: OutboxDelivery[] = [];
    const taken = new Map<number, number>();
    for (const row of candidates) {
      if (out.length >= limit) break;
      const n = taken.get(row.user_id) ?? 0;
      if (n >= perUser) continue;
      taken.set(row.user_id, n + 1);
      out.push(row);
    }
    return out;
  };
  // A row that cannot be leased ends its device's prefix there.
  const leaseRows = (rows: OutboxDelivery[], lease: string, now: number, until: number): OutboxDelivery[] => {
    const stopped = new Set<number>();
    return rows.filter((row) => {
      if (stopped.has(row.device_id)) return false;
      if (leaseOne.run({ id: row.id, lease, now, until }).changes > 0) return true;
      stopped.add(row.device_id);
      return false;
    });
  };
  const removeAll = (ids: number[]): void => {
    for (const id of ids) remove.run(id);
  };

  return {
    async claim(lease, now, leaseMs, limit, perUser, busy) {
      const rows = pick(lease, now, limit, perUser, busy);
      return rows.length === 0 ? rows : write(() => leaseRows(rows, lease, now, now + leaseMs));
    },
    async remove(ids) {
      if (ids.length > 0) await write(() => removeAll(ids));
    },
    async retry(id, lease, attempts, nextAt) {
      await write(() => retry.run(attempts, nextAt, id, lease));
    },
    async trim(maxPerDevice, maxPerUser, maxTotal, now) {
      // Read first, as claim: within bounds, no write lock is taken.
      const victims = trim.all({ device: maxPerDevice, user: maxPerUser, total: maxTotal, now }) as { id: number; reason: "device" | "user" | "total" }[];
      const counts = { device: 0, user: 0, total: 0 };
      for (const v of victims) counts[v.reason]++;
      if (victims.length > 0) await write(() => removeAll(victims.map((v) => v.id)));
      return counts;
    },
    async renew(lease, ids, now, leaseMs) {
      if (ids.length > 0) await write(() => ids.forEach((id) => renewOne.run(now + leaseMs, id, lease)));
    },
    async depth() {
      return depth.get() as number;
    },
  };
}
