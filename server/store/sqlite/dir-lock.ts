/**
 * One server per data directory. Two servers on one directory would both run an ingest thread and
 * a rule engine on the same file: their writes would fight for SQLite's lock (each one's wait
 * counting against the other's busy_timeout) and each would take the other's rule evaluations and
 * jobs over as left by a process that is gone (the leases of rule-evals.ts assume one owner).
 *
 * The lock is SQLite's own: `blockkit.lock` beside the database, opened in EXCLUSIVE locking mode
 * and held from a BEGIN EXCLUSIVE on. It is a POSIX advisory lock (fcntl) of this process, so the
 * operating system drops it when the process ends however it ends (SIGKILL, a crash, a power cut):
 * nothing stale can block the next start. SQLite also tracks its locks per file inside a process,
 * so a second store opened by the same process is refused too. Node has no flock(2); this is the
 * same kind of lock without a native module of our own.
 *
 * `blockkit.pid` holds the owner's process id, written once the lock is held, for the message of
 * the start that is refused (the locked file itself cannot be read through SQLite meanwhile). It is
 * removed at close; one left by a killed process is only ever read after a refused lock, i.e. while
 * a live owner has overwritten it, so a stale one misleads nobody.
 *
 * One-shot commands (`blockkit users`, `apps`, `export`) open the store without an ingest thread
 * and take no lock, and `blockkit backup` only reads the file (backup.ts): they run beside the server
 * by design (docs/operations.md).
 */
import { closeSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { DataDirError } from "./files.js";

export const LOCK_FILE = "blockkit.lock";
export const PID_FILE = "blockkit.pid";

/** The data directory's lock, held until release() (or the process's end). */
export interface DataDirLock {
  release(): void;
}

/** Takes `dir`'s lock at once or throws a DataDirError naming the directory and the owner's pid. */
export function lockDataDir(dir: string): DataDirLock {
  const lockFile = join(dir, LOCK_FILE);
  const pidFile = join(dir, PID_FILE);
  // Created 0600 before SQLite opens it (as the database: files.ts), if missing.
  try {
    closeSync(openSync(lockFile, "a", 0o600));
  } catch (err) {
    throw new DataDirError(`cannot create the lock file ${lockFile}: ${(err as Error).message} (make ${dir} writable by this user)`, { cause: err });
  }
  let db: Database.Database;
  try {
    db = new Database(lockFile);
  } catch (err) {
    throw new DataDirError(`cannot open the lock file ${lockFile}: ${(err as Error).message}`, { cause: err });
  }
  try {
    db.pragma("busy_timeout = 0");
    db.pragma("locking_mode = EXCLUSIVE");
    // Nothing is ever written: no journal file beside it.
    db.pragma("journal_mode = MEMORY");
    db.exec("BEGIN EXCLUSIVE; COMMIT");
  } catch (err) {
    db.close();
    const code = (err as { code?: unknown }).code;
    if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
      const pid = ownerPid(pidFile);
      throw new DataDirError(
        `the data directory ${dir} is in use by another blockkit server (${pid === null ? "pid unknown" : `pid ${pid}`}): one server per data directory. Stop that one first, or choose another directory with --data`,
        { cause: err },
      );
    }
    throw new DataDirError(`cannot lock the data directory ${dir} (${lockFile}): ${(err as Error).message}`, { cause: err });
  }
  try {
    writeFileSync(pidFile, `${process.pid}\n`, { mode: 0o600 });
  } catch {
    // Only the message of a refused start uses it ("pid unknown" then).
  }
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      if (ownerPid(pidFile) === process.pid) rmSync(pidFile, { force: true });
      db.close();
    },
  };
}

function ownerPid(pidFile: string): number | null {
  try {
    const text = readFileSync(pidFile, "utf8").trim();
    return /^\d+$/.test(text) ? Number(text) : null;
  } catch {
    return null;
  }
}
