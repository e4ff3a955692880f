/**
 * Durable group commit without blocking the event loop on fsync.
 *
 * With `synchronous=FULL` SQLite fsyncs the WAL inside COMMIT, on the thread that runs the
 * statement: the server's event loop stood still for every fsync (1–3 ms on an ordinary disk, much
 * more under load), and could neither parse the next requests nor answer the previous ones
 * meanwhile. The ingest transaction therefore runs with `synchronous=NORMAL` (the WAL frames are
 * written to the OS, not flushed) and is acknowledged only after `durable()` resolved: an
 * fdatasync of the WAL file on libuv's thread pool, started after the commit returned. On Linux an
 * fsync through any descriptor flushes the file's pages, so the committed frames are on disk
 * exactly as with FULL; commits arriving while one sync is in flight share the next one.
 *
 * Only the WAL journal mode allows this (a commit in rollback-journal mode writes the database
 * file itself); on a file system where SQLite refused WAL, or for `:memory:`, the store keeps
 * FULL commits and `enabled` is false.
 */
import { type FileHandle, open } from "node:fs/promises";
import { dirname } from "node:path";

interface Waiter {
  seq: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class WalSync {
  /** Waiters not settled yet, in the order they asked (their seq ascending). */
  private readonly waiting: Waiter[] = [];
  private seq = 0;
  /** The highest seq that a flush already started will cover. */
  private covered = 0;
  private inFlight = 0;
  private dirSynced = false;
  /** Counters for tests and metrics. */
  readonly stats = { syncs: 0, waiters: 0 };

  /**
   * `walPath` is `<db>-wal`; null when commits must stay synchronous (FULL). `concurrency`: flushes
   * in flight at once (a flush started later also covers what earlier ones cover, so a disk that
   * overlaps them settles waiters sooner). Default 1: on the disks measured here a second flush in
   * flight did not raise the ingest rate.
   */
  constructor(
    private readonly walPath: string | null,
    private readonly concurrency = 1,
  ) {}

  get enabled(): boolean {
    return this.walPath !== null;
  }

  /** Resolves once everything written to the WAL before this call is on disk. */
  durable(): Promise<void> {
    if (this.walPath === null) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ seq: ++this.seq, resolve, reject });
      this.stats.waiters++;
      this.startIfNeeded(this.walPath as string);
    });
  }

  private startIfNeeded(walPath: string): void {
    if (this.covered === this.seq || this.inFlight >= this.concurrency) return;
    const upTo = this.seq;
    this.covered = upTo;
    this.inFlight++;
    const settle = (err: unknown): void => {
      this.inFlight--;
      // Everything that asked before this flush started is on disk (or failed with it), in order.
      while (this.waiting.length > 0 && (this.waiting[0] as Waiter).seq <= upTo) {
        const w = this.waiting.shift() as Waiter;
        if (err === undefined) w.resolve();
        else w.reject(err);
      }
      this.startIfNeeded(walPath);
    };
    this.syncOnce(walPath).then(() => settle(undefined), settle);
  }

  private async syncOnce(walPath: string): Promise<void> {
    this.stats.syncs++;
    let fh: FileHandle;
    try {
      fh = await open(walPath, "r");
    } catch (err) {
      // No WAL file: the last connection closed and checkpointed it into the database (synced).
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    try {
      await fh.datasync();
    } finally {
      await fh.close();
    }
    if (!this.dirSynced) {
      // The WAL file's directory entry, once: a file created just before a power cut may vanish.
      const dir = await open(dirname(walPath), "r");
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
      this.dirSynced = true;
    }
  }
}
