/**
 * Staged readings. The ingest transaction appends each reading to `readings_staged`, a table
 * without secondary indexes, instead of `readings` with its (device_id, ts, num) index: a batch of
 * readings from many devices would otherwise dirty one index page per device, and every dirty page
 * is a WAL frame written and later checkpointed (measured: 18 µs per reading against 5 µs staged,
 * move included). The rows move into `readings` in bulk, sorted by device and time, in one
 * transaction each: when a threshold of staged rows is reached, once a second, and before anything
 * reads or deletes readings, so that readers only ever look at `readings`. A crash between two
 * moves leaves the rows staged, and the next start moves them.
 */
import type { Database, Statement, Transaction } from "better-sqlite3";

/**
 * WAL pages after which a commit checkpoints (SQLite's default: 1,000), on both connections of the
 * store. A fleet's commits rewrite the same pages over and over (each device's row, the tail of the
 * staged table, the keys' leaves): a checkpoint copies each page once however often the WAL holds
 * it, so ten times fewer checkpoints copy far fewer pages. Measured on the ingest transaction with
 * 10,000 blocks, batches of 128 readings with keys (`BENCH_SCALEOUT=checkpoint`): 0.73–0.85 × the
 * CPU per event in two runs, the statements and COMMIT 0.42 × their wall time. The WAL grows to
 * about 40 MiB (4 KiB pages) before it is reused; a crash replays it at the next start.
 */
export const WAL_AUTOCHECKPOINT_PAGES = 10_000;

export interface StagingOptions {
  /** Staged rows that trigger a move on the next turn of the event loop. Default 1000. */
  threshold?: number;
  /** Longest time a row stays staged, ms. Default 1000. */
  intervalMs?: number;
  /**
   * Another connection (the ingest thread) stages the rows and moves them on its own schedule:
   * this one only moves what it finds when flush() is called (before reads and deletions).
   */
  stagedElsewhere?: boolean;
  /**
   * No timer and no scheduling: the owner calls moveIfDue() (the ingest thread, which blocks on
   * shared memory instead of running an event loop).
   */
  manual?: boolean;
}

export class ReadingsStaging {
  private pending: number;
  private readonly elsewhere: boolean;
  private readonly manual: boolean;
  private readonly intervalMs: number;
  private lastMove = Date.now();
  /** After a failed move, the next one waits an interval (manual mode). */
  private notBefore = 0;
  private scheduled = false;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly threshold: number;
  private readonly insert: Statement;
  private readonly moveAll: Transaction<() => void>;
  /** Counters for tests and the benchmark. */
  readonly stats = { moves: 0, moved: 0, failures: 0 };

  constructor(
    private readonly db: Database,
    options: StagingOptions = {},
  ) {
    this.threshold = options.threshold ?? 1000;
    this.insert = db.prepare("INSERT INTO readings_staged (device_id, ts, num, da) VALUES (?, ?, ?, ?)");
    const copy = db.prepare(
      `INSERT INTO readings (device_id, ts, num, da)
       SELECT device_id, ts, num, da FROM readings_staged WHERE id <= ? ORDER BY device_id, ts, id`,
    );
    const clear = db.prepare("DELETE FROM readings_staged WHERE id <= ?");
    const last = db.prepare("SELECT max(id) FROM readings_staged").pluck();
    this.moveAll = db.transaction(() => {
      const upTo = last.get() as number | null;
      if (upTo === null) return;
      this.stats.moves++;
      const n = copy.run(upTo).changes;
      clear.run(upTo);
      this.stats.moved += n;
    });
    this.pending = db.prepare("SELECT count(*) FROM readings_staged").pluck().get() as number;
    this.elsewhere = options.stagedElsewhere ?? false;
    this.manual = options.manual ?? false;
    this.intervalMs = options.intervalMs ?? 1000;
    if (db.memory || this.intervalMs === 0 || this.elsewhere || this.manual) return;
    this.timer = setInterval(() => this.background(), this.intervalMs);
    this.timer.unref();
  }

  /** Appends one reading; call inside the ingest transaction. */
  add(deviceId: number, ts: number, num: number | null, da: string): void {
    this.insert.run(deviceId, ts, num, da);
  }

  /** Records that a transaction with `n` staged rows committed. */
  committed(n: number): void {
    this.pending += n;
    if (this.pending >= this.threshold && !this.scheduled && !this.manual) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.background();
      });
    }
  }

  /** Moves every staged row into `readings` now. Readers and deleters call this first. */
  flush(): void {
    if (this.pending === 0 && !this.elsewhere) return;
    // IMMEDIATE: with two connections writing, a transaction that reads before it writes fails at
    // once ("database is locked") if the other one commits in between; this one waits its turn.
    this.moveAll.immediate();
    this.pending = 0;
    this.lastMove = Date.now();
  }

  /** Manual mode: ms until a move is due (0: now), or Infinity while nothing is staged. */
  dueIn(now: number): number {
    if (this.pending === 0) return Infinity;
    const at = this.pending >= this.threshold ? this.notBefore : Math.max(this.notBefore, this.lastMove + this.intervalMs);
    return Math.max(0, at - now);
  }

  /** Manual mode: moves the staged rows if the threshold or the interval says so. */
  moveIfDue(now: number): void {
    if (this.dueIn(now) === 0) this.background();
  }

  /** Stops the timer and moves what is left (before the database is closed). */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    // On a full disk the rows stay staged (committed there): the next start moves them.
    this.background();
  }

  private background(): void {
    if (!this.db.open) return;
    try {
      this.flush();
    } catch {
      // SQLITE_BUSY from another process, or a full disk: the rows stay staged, readers still find
      // them after their own flush, and the next tick tries again.
      this.stats.failures++;
      this.notBefore = Date.now() + this.intervalMs;
    }
  }
}
