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
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class WalSync {
  private running = false;
  private waiting: Waiter[] = [];
  private dirSynced = false;
  /** Counters for tests and metrics. */
  readonly stats = { syncs: 0, waiters: 0 };

  /** `walPath` is `<db>-wal`; null when commits must stay synchronous (FULL). */
  constructor(private readonly walPath: string | null) {}

  get enabled(): boolean {
    return this.walPath !== null;
  }

  /** Resolves once everything written to the WAL before this call is on disk. */
  durable(): Promise<void> {
    if (this.walPath === null) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.stats.waiters++;
      if (!this.running) this.next(this.walPath as string);
    });
  }

  private next(walPath: string): void {
    const batch = this.waiting;
    this.waiting = [];
    this.running = true;
    const settle = (err: unknown): void => {
      // The next flush starts before these waiters hear back: whatever they write next waits for it.
      this.running = false;
      if (this.waiting.length > 0) this.next(walPath);
      for (const w of batch) {
        if (err === undefined) w.resolve();
        else w.reject(err);
      }
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
