/**
 * Range partitions of `readings` (on `ts`, epoch ms, UTC) by day, week (from Monday) or calendar
 * month. The interval is the database's, recorded in `server_keys` when its first partitions are
 * made (month for a database made before the option existed); a server started with another one is
 * refused, and `blockkit migrate --partition-interval` changes it for the whole cluster. The server
 * creates the current bucket's partition and the next ones (partition-ranges.ts AHEAD) at start and
 * every hour; a batch whose readings fall where no partition is creates one first. A partition only
 * ever fills a gap between the ones that exist, so intervals never overlap: after a change the
 * partitions already made stay, empty future ones of the old interval are replaced, and the new
 * interval starts where the old partitions end. Readings from before the current bucket (a
 * gateway's replay, a reading from 2001) go into gaps of at most a calendar month, so stray old
 * timestamps cannot make a partition per day. With a retention, partitions that end before
 * `now - retention` are dropped whole: a catalogue change instead of a DELETE of their rows.
 */
import type pg from "pg";
import { q, tx } from "./db.js";
import { type PartitionInterval, type Range, aheadOf, bucketOf, gaps, isPartitionInterval, parseBound, partitionName } from "./partition-ranges.js";

const LOCK = "blockkit:readings-partitions";
const INTERVAL_KEY = "readings_partition_interval";
const DAY = 86_400_000;
/** Readings are refused more than 5 minutes ahead: a partition starting later is empty unless made by hand. */
const FUTURE_MS = 10 * 60_000;

export interface PartitionOptions {
  /** Readings older than this are dropped, a partition at a time. Default: kept. */
  retentionMs?: number | null;
  /** The interval asked for (`--partition-interval`); none: the database's. */
  interval?: PartitionInterval;
  /** Make `interval` the database's (`blockkit migrate`); otherwise a different one is refused. */
  change?: boolean;
}

/** Lists the partitions of `readings` with their bounds (in the connection's search path). */
export async function listPartitions(c: pg.Pool | pg.PoolClient): Promise<{ name: string; range: Range }[]> {
  const rows = await q<{ name: string; bound: string }>(
    c,
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'readings'::regclass`,
  );
  return rows.flatMap((r) => {
    const range = parseBound(r.bound);
    return range ? [{ name: r.name, range }] : [];
  });
}

/**
 * Creates partitions covering the given timestamps where none does, inside the caller's transaction
 * (which holds the lock): `interval` buckets from `now`'s bucket on, month buckets before it.
 */
export async function coverTimestamps(c: pg.PoolClient, timestamps: Iterable<number>, interval: PartitionInterval, now: number): Promise<number> {
  const have = (await listPartitions(c)).map((p) => p.range);
  const current = bucketOf(interval, now)[0];
  let made = 0;
  for (const ts of timestamps) {
    if (have.some(([from, to]) => ts >= from && ts < to)) continue;
    for (const gap of gaps(bucketOf(ts >= current ? interval : "month", ts), have)) {
      await c.query(`CREATE TABLE ${partitionName(gap)} PARTITION OF readings FOR VALUES FROM (${gap[0]}) TO (${gap[1]})`);
      have.push(gap);
      made++;
    }
  }
  return made;
}

export class ReadingPartitions {
  /** The days that the partitions known to exist wholly cover (the hot path's check). */
  private readonly covered = new Set<number>();
  private timer: NodeJS.Timeout | undefined;
  /** The database's interval, known after start(). */
  interval: PartitionInterval = "month";
  /** Counters for tests and /metrics. */
  readonly stats = { created: 0, dropped: 0 };

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: PartitionOptions = {},
  ) {}

  /** Settles the database's interval and makes the partitions ahead (`blockkit migrate` stops there). */
  async prepare(now = Date.now()): Promise<void> {
    await this.settle();
    await this.maintain(now);
  }

  async start(now = Date.now()): Promise<void> {
    await this.prepare(now);
    this.timer = setInterval(() => {
      this.maintain(Date.now()).catch(() => undefined); // PostgreSQL away: the next hour tries again
    }, 3_600_000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * Creates the partitions ahead (replacing empty future ones of another interval) and drops the
   * expired ones. Follows the database's interval as recorded now: one changed by `blockkit migrate`
   * while this instance runs is taken up here, so instances never undo each other's partitions.
   */
  async maintain(now: number): Promise<void> {
    await this.locked(async (c) => {
      const row = (await c.query<{ value: string }>("SELECT value FROM server_keys WHERE name = $1", [INTERVAL_KEY])).rows[0];
      if (row && isPartitionInterval(row.value)) this.interval = row.value;
      const ahead = aheadOf(this.interval, now);
      for (const p of await listPartitions(c)) {
        const [from, to] = p.range;
        if (from <= now + FUTURE_MS) continue;
        const b = bucketOf(this.interval, from);
        if (b[0] === from && b[1] === to) continue;
        const empty = (await c.query(`SELECT NOT EXISTS (SELECT 1 FROM ${p.name}) AS empty`)).rows[0] as { empty: boolean };
        if (empty.empty) await c.query(`DROP TABLE ${p.name}`);
      }
      this.stats.created += await coverTimestamps(c, ahead.map(([from]) => from), this.interval, now);
    });
    if (this.options.retentionMs != null) await this.dropBefore(now - this.options.retentionMs);
  }

  /** Makes sure these timestamps have partitions (before a batch inserts into them). */
  async ensureFor(timestamps: Iterable<number>): Promise<void> {
    const missing = new Map<number, number>();
    for (const ts of timestamps) {
      const day = Math.floor(ts / DAY);
      if (!this.covered.has(day) && !missing.has(day)) missing.set(day, ts);
    }
    if (missing.size === 0) return;
    await this.locked(async (c) => {
      this.stats.created += await coverTimestamps(c, missing.values(), this.interval, Date.now());
    });
  }

  /** Drops every partition that ends at or before `before`; returns how many. */
  async dropBefore(before: number): Promise<number> {
    let dropped = 0;
    await this.locked(async (c) => {
      for (const p of await listPartitions(c)) {
        if (p.range[1] > before) continue;
        await c.query(`DROP TABLE IF EXISTS ${p.name}`);
        dropped++;
      }
    });
    this.stats.dropped += dropped;
    return dropped;
  }

  /** Reads (on a new database: records) the database's interval; refuses or records a different one. */
  private async settle(): Promise<void> {
    const asked = this.options.interval;
    await tx(this.pool, async (c) => {
      await c.query("SELECT pg_advisory_xact_lock(hashtext($1))", [LOCK]);
      const row = (await c.query<{ value: string }>("SELECT value FROM server_keys WHERE name = $1", [INTERVAL_KEY])).rows[0];
      let current: PartitionInterval;
      if (row) {
        if (!isPartitionInterval(row.value)) throw new Error(`server_keys ${INTERVAL_KEY} is "${row.value}": not day, week or month`);
        current = row.value;
      } else {
        // A database whose partitions were made before the interval was recorded has monthly ones.
        const old = await c.query("SELECT 1 FROM pg_inherits WHERE inhparent = 'readings'::regclass LIMIT 1");
        current = (old.rowCount ?? 0) > 0 ? "month" : (asked ?? "month");
      }
      if (asked !== undefined && asked !== current && !this.options.change) {
        throw new Error(
          `the readings of this database are partitioned by ${current}; this server was started with --partition-interval ${asked}. ` +
            `Start it with --partition-interval ${current} (or without the option), or change the database's interval first: blockkit migrate --db URL --partition-interval ${asked}`,
        );
      }
      if (asked !== undefined && this.options.change) current = asked;
      await c.query(
        "INSERT INTO server_keys (name, value, created) VALUES ($1, $2, $3) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        [INTERVAL_KEY, current, Date.now()],
      );
      this.interval = current;
    });
  }

  /** Forgets which partitions exist: the next batch looks them up again. */
  forget(): void {
    this.covered.clear();
  }

  /** Runs `fn` in a transaction holding the partitions lock (one maker at a time across instances), then rereads what exists. */
  private async locked(fn: (c: pg.PoolClient) => Promise<void>): Promise<void> {
    const ranges = await tx(this.pool, async (c) => {
      await c.query("SELECT pg_advisory_xact_lock(hashtext($1))", [LOCK]);
      await fn(c);
      return (await listPartitions(c)).map((p) => p.range);
    });
    this.remember(ranges); // once committed: a rolled-back creation is not taken as made
  }

  private remember(ranges: Range[]): void {
    this.covered.clear();
    for (const [from, to] of ranges) for (let d = Math.ceil(from / DAY); (d + 1) * DAY <= to; d++) this.covered.add(d);
  }
}
