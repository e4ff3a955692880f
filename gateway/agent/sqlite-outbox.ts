/**
 * The gateway's durable outbox: one SQLite file (WAL) in the state directory. An append commits
 * before it returns (synchronous=FULL by default, so a reading survives a power cut too); an entry
 * is deleted only once the server acknowledged it. The drop counter is persisted with the rows.
 *
 * Disk space: before each append the free space of the file's filesystem is measured (statfs).
 * The byte bound in force is the smaller of `maxBytes` and what the filesystem can still hold above
 * `reserveBytes` (so drop-oldest applies before the disk fills); when the free space is below half
 * the reserve anyway (another writer filled the disk) or SQLite reports the disk full or failing,
 * the append throws OutboxFullError and stores nothing: the outbox is `full` until space returns.
 * The other half keeps room for the deletes of a replay (WAL frames) and the checkpoints.
 */
import { closeSync, existsSync, openSync, statSync, statfsSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { entryBytes } from "./memory.js";
import {
  DEFAULT_OUTBOX_LIMITS,
  OutboxFullError,
  type NewOutboxEntry,
  type Outbox,
  type OutboxEntry,
  type OutboxLimits,
  type OutboxStats,
} from "./types.js";

export interface SqliteOutboxOptions extends Partial<OutboxLimits> {
  /** `full` (default): every append reaches the disk; `normal`: survives a crash of the process, not of the machine. */
  sync?: "full" | "normal";
  /** Free space kept on the filesystem, bytes. Default 16 MiB. */
  reserveBytes?: number;
}

export const DEFAULT_RESERVE_BYTES = 16 * 2 ** 20;

/** SQLite result codes that mean "this file cannot take a write now" (disk full, I/O error, read-only). */
const UNWRITABLE = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN|CORRUPT|NOTADB)/;

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
  private readonly dir: string;
  private readonly reserve: number;
  private readonly pageSize: number;
  /** Why the last append was refused, until an append succeeds. */
  private refusal: { reason: string; space: boolean } | null = null;
  private freeBytes = -1;

  constructor(
    private readonly file: string,
    options: SqliteOutboxOptions = {},
  ) {
    this.limits = { ...DEFAULT_OUTBOX_LIMITS, ...options };
    this.reserve = options.reserveBytes ?? DEFAULT_RESERVE_BYTES;
    if (!Number.isFinite(this.reserve) || this.reserve < 0) throw new TypeError(`SqliteOutbox: reserveBytes must be >= 0, got ${String(options.reserveBytes)}`);
    this.dir = dirname(file);
    // Created 0600 before SQLite opens it: its -wal and -shm get the same mode.
    if (!existsSync(file)) closeSync(openSync(file, "wx", 0o600));
    this.db = new Database(file);
    this.db.pragma("journal_mode = WAL");
    // A checkpointed WAL is truncated back to 4 MiB at most: the reserve covers it.
    this.db.pragma(`journal_size_limit = ${4 * 2 ** 20}`);
    this.pageSize = this.db.pragma("page_size", { simple: true }) as number;
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
    const free = this.measureFree();
    if (free < this.reserve / 2) {
      const reason = `${free} bytes free on the filesystem of ${this.dir}, below half the reserve of ${this.reserve}`;
      this.refusal = { reason, space: true };
      throw new OutboxFullError(reason);
    }
    const maxBytes = Math.min(this.limits.maxBytes, this.diskBound(free));
    const before = { rows: this.rows, bytes: this.bytes, dropped: this.dropped };
    let dropped = 0;
    try {
      this.db.transaction(() => {
        for (const e of entries) {
          const b = entryBytes(e);
          this.insert.run(e.kind, e.G, e.V, e.D, e.DA, e.value, e.ts, e.key, b);
          this.rows++;
          this.bytes += b;
        }
        dropped = this.dropWhile(() => this.rows > this.limits.maxRows || (this.bytes > maxBytes && this.rows > 1));
      })();
    } catch (err) {
      // Rolled back: the counters go back with the rows.
      this.rows = before.rows;
      this.bytes = before.bytes;
      this.dropped = before.dropped;
      const code = (err as { code?: unknown }).code;
      if (typeof code === "string" && UNWRITABLE.test(code)) {
        const reason = `${code} writing ${this.file}: ${(err as Error).message}`;
        this.refusal = { reason, space: code === "SQLITE_FULL" };
        throw new OutboxFullError(reason, { cause: err });
      }
      throw err;
    }
    this.refusal = null;
    return dropped;
  }

  /**
   * Free bytes for an unprivileged writer on the outbox's filesystem (statfs), less what the file
   * will still grow by: pages written to the WAL only are copied into the database file at the
   * next checkpoint, and the file grows then, all at once.
   */
  private measureFree(): number {
    const s = statfsSync(this.dir);
    const pending = this.pageCount() * this.pageSize - statSync(this.file).size;
    this.freeBytes = Math.max(0, s.bavail * s.bsize - Math.max(0, pending));
    return this.freeBytes;
  }

  private pageCount(): number {
    return this.db.pragma("page_count", { simple: true }) as number;
  }

  /**
   * The most payload bytes the filesystem can still hold above the reserve: what the outbox holds,
   * plus the free space above the reserve and the free pages inside the file, divided by what a
   * payload byte costs on disk (measured on the rows kept; 4 until there are enough of them).
   */
  private diskBound(free: number): number {
    const freePages = this.db.pragma("freelist_count", { simple: true }) as number;
    const used = (this.pageCount() - freePages) * this.pageSize;
    const cost = this.rows >= 256 && this.bytes > 0 ? Math.max(1.2, used / this.bytes) : 4;
    return this.bytes + (free - this.reserve + freePages * this.pageSize) / cost;
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
    } catch (err) {
      // A delete the disk cannot take (it was filled past the reserve): the entries stay and are
      // sent again (the server drops them by their KEY); the outbox says it is full meanwhile.
      const code = (err as { code?: unknown }).code;
      if (typeof code !== "string" || !UNWRITABLE.test(code)) throw err;
      this.refusal = { reason: `${code} deleting from ${this.file}: ${(err as Error).message}`, space: code === "SQLITE_FULL" };
      this.reload();
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

  /** Counters from the file again, after a statement failed half-way. */
  private reload(): void {
    const agg = this.db.prepare("SELECT count(*) AS rows, coalesce(sum(bytes), 0) AS bytes FROM outbox").get() as { rows: number; bytes: number };
    this.rows = agg.rows;
    this.bytes = agg.bytes;
  }

  expire(now: number): number {
    const cutoff = now - this.limits.maxAgeMs;
    let n = 0;
    try {
      this.db.transaction(() => {
        n = this.dropWhile((ts) => ts < cutoff);
      })();
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (typeof code !== "string" || !UNWRITABLE.test(code)) throw err;
      this.refusal = { reason: `${code} expiring in ${this.file}: ${(err as Error).message}`, space: code === "SQLITE_FULL" };
      this.reload();
      this.dropped = (this.db.prepare("SELECT n FROM outbox_meta WHERE name = 'dropped'").get() as { n: number }).n;
      return 0;
    }
    return n;
  }

  stats(): OutboxStats {
    return { rows: this.rows, bytes: this.bytes, dropped: this.dropped, full: this.isFull(), freeBytes: this.freeBytes };
  }

  /**
   * Whether appends are refused now. Space may have returned since the last refused append: a
   * refusal for want of space (the reserve, SQLITE_FULL) ends as soon as the reserve is free again;
   * any other write error only with an append that succeeds.
   */
  private isFull(): boolean {
    if (this.refusal === null) return false;
    if (!this.refusal.space || !this.db.open) return true;
    try {
      return this.measureFree() < this.reserve / 2;
    } catch {
      return true;
    }
  }

  /** Size of the database file and its WAL, bytes (for tests and /metrics). */
  fileBytes(): number {
    let n = 0;
    for (const f of [this.file, `${this.file}-wal`]) {
      try {
        n += statSync(f).size;
      } catch {
        // no WAL yet
      }
    }
    return n;
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
