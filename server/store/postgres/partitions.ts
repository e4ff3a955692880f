/**
 * Monthly range partitions of `readings` (on `ts`, epoch ms, UTC months). The server creates the
 * current month's and the next two months' partitions at start and every hour, and a batch whose
 * readings fall in a month without one creates it first (a reading from 1970 or 2090 is kept, in a
 * partition of its own). With a retention, partitions that end before `now - retention` are
 * dropped whole, which costs a catalogue change instead of a DELETE of their rows.
 */
import type pg from "pg";
import { utcMonthStart } from "../../../protocol/history.js";
import { q, tx } from "./db.js";

const LOCK = "blockkit:readings-partitions";
const AHEAD_MONTHS = 2;

export const monthIndex = (ts: number): number => {
  const d = new Date(ts);
  return d.getUTCFullYear() * 12 + d.getUTCMonth();
};
export const monthBounds = (m: number): [number, number] => [utcMonthStart(Math.floor(m / 12), m % 12), utcMonthStart(Math.floor((m + 1) / 12), (m + 1) % 12)];
export const partitionName = (m: number): string => `readings_p${String(Math.floor(m / 12)).padStart(4, "0")}${String((m % 12) + 1).padStart(2, "0")}`;
const PARTITION = /^readings_p(\d{4,})(\d{2})$/;

/** The statement that creates month `m`'s partition when it is missing. */
export const createPartitionSql = (m: number): string => {
  const [from, to] = monthBounds(m);
  return `CREATE TABLE IF NOT EXISTS ${partitionName(m)} PARTITION OF readings FOR VALUES FROM (${from}) TO (${to})`;
};

export class ReadingPartitions {
  private readonly known = new Set<number>();
  private timer: NodeJS.Timeout | undefined;
  /** Counters for tests and /metrics. */
  readonly stats = { created: 0, dropped: 0 };

  constructor(
    private readonly pool: pg.Pool,
    private readonly retentionMs: number | null,
  ) {}

  async start(now = Date.now()): Promise<void> {
    await this.load();
    await this.maintain(now);
    this.timer = setInterval(() => {
      this.maintain(Date.now()).catch(() => undefined); // PostgreSQL away: the next hour tries again
    }, 3_600_000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Creates the partitions ahead and drops the expired ones. */
  async maintain(now: number): Promise<void> {
    const current = monthIndex(now);
    await this.ensure(Array.from({ length: AHEAD_MONTHS + 1 }, (_, i) => current + i));
    if (this.retentionMs !== null) await this.dropBefore(now - this.retentionMs);
  }

  /** Makes sure the months of these timestamps have partitions (before a batch inserts into them). */
  async ensureFor(timestamps: Iterable<number>): Promise<void> {
    const missing = new Set<number>();
    for (const ts of timestamps) {
      const m = monthIndex(ts);
      if (!this.known.has(m)) missing.add(m);
    }
    if (missing.size > 0) await this.ensure([...missing]);
  }

  /** Drops every partition whose months end at or before `before`; returns how many. */
  async dropBefore(before: number): Promise<number> {
    await this.load();
    const old = [...this.known].filter((m) => monthBounds(m)[1] <= before);
    if (old.length === 0) return 0;
    await tx(this.pool, async (c) => {
      await c.query("SELECT pg_advisory_xact_lock(hashtext($1))", [LOCK]);
      for (const m of old) await c.query(`DROP TABLE IF EXISTS ${partitionName(m)}`);
    });
    for (const m of old) this.known.delete(m);
    this.stats.dropped += old.length;
    return old.length;
  }

  private async ensure(months: number[]): Promise<void> {
    const missing = months.filter((m) => !this.known.has(m));
    if (missing.length === 0) return;
    await tx(this.pool, async (c) => {
      // One creator at a time across instances; IF NOT EXISTS covers a partition made meanwhile.
      await c.query("SELECT pg_advisory_xact_lock(hashtext($1))", [LOCK]);
      for (const m of missing) await c.query(createPartitionSql(m));
    });
    for (const m of missing) this.known.add(m);
    this.stats.created += missing.length;
  }

  /** Reads the partitions that exist (another instance may have made or dropped some). */
  private async load(): Promise<void> {
    const rows = await q<{ name: string }>(
      this.pool,
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'readings'::regclass`,
    );
    this.known.clear();
    for (const r of rows) {
      const m = PARTITION.exec(r.name);
      if (m) this.known.add(Number(m[1]) * 12 + Number(m[2]) - 1);
    }
  }
}
