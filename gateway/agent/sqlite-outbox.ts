/**
 * The gateway's durable outbox: one SQLite file (WAL) in the state directory. An append commits
 * before it returns (synchronous=FULL by default, so a reading survives a power cut too); an entry
 * is deleted only once the server acknowledged it. The drop counter is persisted with the rows.
 */
import Database from "better-sqlite3";
import { entryBytes } from "./memory.js";
import {
  DEFAULT_OUTBOX_LIMITS,
  type NewOutboxEntry,
  type Outbox,
  type OutboxEntry,
  type OutboxLimits,
  type OutboxStats,
} from "./types.js";

export interface SqliteOutboxOptions extends Partial<OutboxLimits> {
  /** `full` (default): every append reaches the disk; `normal`: survives a crash of the process, not of the machine. */
  sync?: "full" | "normal";
}

export class SqliteOutbox implements Outbox {
  private readonly db: Database.Database;
  private readonly limits: OutboxLimits;
  private rows: number;
  private bytes: number;
  private dropped: number;
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;
  private readonly oldest: Database.Statement;
  private readonly setDropped: Database.Statement;
  private readonly deleteRange: Database.Statement;
  private readonly full: boolean;

  constructor(file: string, options: SqliteOutboxOptions = {}) {
    this.limits = { ...DEFAULT_OUTBOX_LIMITS, ...options };
    this.db = new Database(file);
    this.db.pragma("journal_mode = WAL");
    this.full = options.sync !== "normal";
    this.db.pragma(`synchronous = ${this.full ? "FULL" : "NORMAL"}`);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, g TEXT NOT NULL, v INTEGER NOT NULL,
        d INTEGER NOT NULL, da TEXT NOT NULL, value TEXT, ts INTEGER NOT NULL, key TEXT NOT NULL,
        bytes INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS outbox_meta (name TEXT PRIMARY KEY, n INTEGER NOT NULL);
      INSERT OR IGNORE INTO outbox_meta (name, n) VALUES ('dropped', 0);`);
    const agg = this.db.prepare("SELECT count(*) AS rows, coalesce(sum(bytes), 0) AS bytes FROM outbox").get() as {
      rows: number;
      bytes: number;
    };
    this.rows = agg.rows;
    this.bytes = agg.bytes;
    this.dropped = (this.db.prepare("SELECT n FROM outbox_meta WHERE name = 'dropped'").get() as { n: number }).n;
    this.insert = this.db.prepare(
      "INSERT INTO outbox (kind, g, v, d, da, value, ts, key, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    // Columns named as OutboxEntry's fields: the rows are the entries, no copy per row.
    this.select = this.db.prepare("SELECT id, kind, g AS G, v AS V, d AS D, da AS DA, value, ts, key FROM outbox WHERE id > ? ORDER BY id LIMIT ?");
    this.oldest = this.db.prepare("SELECT id, ts, bytes FROM outbox ORDER BY id LIMIT ?");
    this.setDropped = this.db.prepare("UPDATE outbox_meta SET n = ? WHERE name = 'dropped'");
    this.deleteRange = this.db.prepare("DELETE FROM outbox WHERE id BETWEEN ? AND ? RETURNING bytes");
  }

  append(entries: NewOutboxEntry[]): number {
    let dropped = 0;
    this.db.transaction(() => {
      for (const e of entries) {
        const b = entryBytes(e);
        this.insert.run(e.kind, e.G, e.V, e.D, e.DA, e.value, e.ts, e.key, b);
        this.rows++;
        this.bytes += b;
      }
      dropped = this.dropWhile(() => this.rows > this.limits.maxRows || this.bytes > this.limits.maxBytes);
    })();
    return dropped;
  }

  peek(limit: number, afterId = 0): OutboxEntry[] {
    return this.select.all(afterId, limit) as OutboxEntry[];
  }

  ack(ids: number[]): void {
    if (ids.length === 0) return;
    // A delete need not reach the disk at once: if it is lost, the reading is sent again and the
    // server drops it by its KEY. The next appending commit (FULL) syncs the WAL with it.
    if (this.full) this.db.pragma("synchronous = NORMAL");
    try {
      this.ackNow(ids);
    } finally {
      if (this.full) this.db.pragma("synchronous = FULL");
    }
  }

  private ackNow(ids: number[]): void {
    // A replay acknowledges runs of consecutive ids: one range delete instead of an IN list.
    const sorted = [...ids].sort((a, b) => a - b);
    const first = sorted[0] as number;
    const last = sorted[sorted.length - 1] as number;
    if (last - first + 1 === sorted.length && new Set(sorted).size === sorted.length) {
      this.db.transaction(() => {
        const r = this.deleteRange.all(first, last) as { bytes: number }[];
        this.rows -= r.length;
        for (const x of r) this.bytes -= x.bytes;
      })();
      return;
    }
    this.db.transaction(() => {
      for (let i = 0; i < ids.length; i += 500) {
        const chunk = ids.slice(i, i + 500);
        const r = this.db
          .prepare(`DELETE FROM outbox WHERE id IN (${chunk.map(() => "?").join(",")}) RETURNING bytes`)
          .all(...chunk) as { bytes: number }[];
        this.rows -= r.length;
        for (const x of r) this.bytes -= x.bytes;
      }
    })();
  }

  expire(now: number): number {
    const cutoff = now - this.limits.maxAgeMs;
    let n = 0;
    this.db.transaction(() => {
      n = this.dropWhile((ts) => ts < cutoff);
    })();
    return n;
  }

  stats(): OutboxStats {
    return { rows: this.rows, bytes: this.bytes, dropped: this.dropped };
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /** Deletes oldest entries while `more(ts of the oldest)` holds; inside a transaction. */
  private dropWhile(more: (oldestTs: number) => boolean): number {
    let n = 0;
    while (this.rows > 0) {
      const batch = this.oldest.all(256) as { id: number; ts: number; bytes: number }[];
      const gone: number[] = [];
      for (const r of batch) {
        if (!more(r.ts)) break;
        gone.push(r.id);
        this.rows--;
        this.bytes -= r.bytes;
      }
      if (gone.length > 0) this.db.prepare(`DELETE FROM outbox WHERE id <= ?`).run(gone[gone.length - 1]);
      n += gone.length;
      if (gone.length < batch.length || batch.length === 0) break;
    }
    if (n > 0) {
      this.dropped += n;
      this.setDropped.run(this.dropped);
    }
    return n;
  }
}
