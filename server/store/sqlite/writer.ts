/**
 * The event loop's writes on the embedded store, without waiting in SQLite's busy handler.
 *
 * Block events are committed by the ingest thread (ingest-thread.ts), whose group commits hold
 * SQLite's write lock back to back under a fleet's load. Every other write (an activation, a
 * device's name, a rule, a token…) runs on the event loop's connection. With `busy_timeout`, such a
 * write that found the lock taken waited for it synchronously, up to 5 s: every request, held poll
 * and timer of the server waited with it, and a write that kept missing the lock between two
 * commits answered 503 (35 activations in one 8,000-block fleet run on a busy machine).
 *
 * Now the event loop's connection has `busy_timeout = 0` and each write:
 *  1. waits on the event loop for its turn at the lock against the ingest thread (a flag in the
 *     channel's shared memory: the ingest thread hands the turn over before its next batch, so a
 *     write waits for one commit at most and never starves behind a stream of them);
 *  2. opens `BEGIN IMMEDIATE`, which fails at once, before any work, when another process (a
 *     `blockkit users` command) holds the lock: the turn is given back and the write tried again
 *     after 1, 2, 4, 8, 16, 16… ms, up to `maxWaitMs` (5 s, as busy_timeout was) in all, and then
 *     fails with SQLITE_BUSY (a 503, as before);
 *  3. runs the repository's method inside that transaction (its own transactions become
 *     savepoints), and commits, or rolls back when the method failed.
 * Writes are queued one at a time (a method may await: its transaction stays open until it is
 * settled); they hold the turn only while they run, so a batch of the ingest thread goes in between
 * two when it waits.
 */
import type { Database } from "better-sqlite3";
import type { IngestThread } from "./ingest-thread.js";

/** Longest wait of a write for the lock, ms: then it fails with SQLITE_BUSY (503). */
export const MAX_WRITE_WAIT_MS = 5000;
const MAX_RETRY_DELAY_MS = 16;

const isBusy = (err: unknown): boolean => /^SQLITE_(BUSY|LOCKED)/.test(String((err as { code?: unknown }).code));

export class MainWriter {
  private tail: Promise<unknown> = Promise.resolve();
  /** Counters for tests and the benchmark: writes run, and retries after another process's lock. */
  readonly stats = { writes: 0, retries: 0 };

  constructor(
    private readonly db: Database,
    private readonly thread: IngestThread,
    private readonly maxWaitMs = MAX_WRITE_WAIT_MS,
  ) {}

  /**
   * Runs `fn` (a repository method's body) as one write transaction, in its turn. `relaxed`: its
   * COMMIT does not wait for the disk (synchronous=NORMAL for it alone: it survives a process kill,
   * not a power cut), for bookkeeping whose loss costs a repeat (the callback outbox's leases).
   */
  run<T>(fn: () => Promise<T> | T, relaxed = false): Promise<T> {
    const done = this.tail.then(() => (relaxed ? this.relaxed(fn) : this.write(fn)));
    this.tail = done.catch(() => undefined);
    return done;
  }

  /** The safety level may not change inside a transaction: around it, while no other write of this connection runs. */
  private async relaxed<T>(fn: () => Promise<T> | T): Promise<T> {
    const level = this.db.pragma("synchronous", { simple: true }) as number;
    if (level <= 1) return this.write(fn);
    this.db.pragma("synchronous = NORMAL");
    try {
      return await this.write(fn);
    } finally {
      this.db.pragma(`synchronous = ${level}`);
    }
  }

  private async write<T>(fn: () => Promise<T> | T): Promise<T> {
    const deadline = Date.now() + this.maxWaitMs;
    let delay = 1;
    for (;;) {
      await this.thread.takeWriter();
      try {
        this.db.exec("BEGIN IMMEDIATE");
        break;
      } catch (err) {
        this.thread.releaseWriter();
        if (!isBusy(err) || Date.now() + delay > deadline) throw err;
      }
      this.stats.retries++;
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
    }
    try {
      const out = await fn();
      this.db.exec("COMMIT");
      this.stats.writes++;
      return out;
    } catch (err) {
      if (this.db.inTransaction) this.db.exec("ROLLBACK");
      throw err;
    } finally {
      this.thread.releaseWriter();
    }
  }
}

/**
 * `repo` with every method but `reads` run through `writer`. `reads`: methods that only read (a
 * WAL reader never waits for the write lock) or write elsewhere (events.commit, on the ingest
 * thread); every other method is taken for a write, so a method added later is safe by default.
 */
export function throughWriter<T extends object>(repo: T, writer: MainWriter, reads: readonly string[]): T {
  const out: Record<string, unknown> = {};
  // Own properties (the repositories are object literals) and a class's methods alike.
  for (let o: object | null = repo; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const name of Object.getOwnPropertyNames(o)) {
      if (name === "constructor" || name in out) continue;
      const value = (repo as Record<string, unknown>)[name];
      if (typeof value !== "function") out[name] = value;
      else if (reads.includes(name)) out[name] = value.bind(repo);
      else out[name] = (...args: unknown[]) => writer.run(() => (value as (...a: unknown[]) => unknown).apply(repo, args));
    }
  }
  return out as T;
}
