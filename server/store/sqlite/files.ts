/**
 * The data directory and its database files, before SQLite opens them: the directory is 0700 and
 * `blockkit.db` (with `-wal` and `-shm`, which SQLite creates with the database file's mode) 0600,
 * since they hold password hashes, the session key and callback secrets. Looser modes found at
 * start are tightened, with a warning. A 0-byte database file is refused (SQLite would silently
 * make it a new, empty database); so is a directory without a database when the caller (an
 * account command) did not ask to create one. Every error names the file and what to do.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from "node:fs";
import { join } from "node:path";

export const DB_FILE = "blockkit.db";

export class DataDirError extends Error {
  override readonly name = "DataDirError";
}

export interface PrepareOptions {
  /** Create the directory and an empty database when missing. Default true (the server). */
  create?: boolean;
  /** Where warnings go (tightened modes). */
  warn?: (message: string) => void;
}

/** Checks and prepares `dir`; returns the database file's path. Throws DataDirError. */
export function prepareDataDir(dir: string, o: PrepareOptions = {}): string {
  const create = o.create ?? true;
  const file = join(dir, DB_FILE);
  if (!existsSync(dir)) {
    if (!create) throw new DataDirError(`no blockkit database at ${file}: the directory ${dir} does not exist (check --data/--db, or pass --create to start a new database there)`);
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new DataDirError(`cannot create the data directory ${dir}: ${(err as Error).message} (create it, writable by this user, or choose another with --data)`, { cause: err });
    }
  }
  tighten(dir, 0o700, o.warn);
  if (existsSync(file)) {
    const st = statSync(file);
    if (st.size === 0) {
      throw new DataDirError(
        `the database file ${file} is empty (0 bytes): it was truncated or never written, and starting on it would make a new, empty database. Restore it from a backup, or delete it to start a new database`,
      );
    }
    for (const f of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(f)) tighten(f, 0o600, o.warn);
    return file;
  }
  if (!create) throw new DataDirError(`no blockkit database at ${file} (check --data/--db, or pass --create to start a new database there)`);
  try {
    // Created 0600 before SQLite opens it: SQLite makes its -wal and -shm with the same mode.
    closeSync(openSync(file, "wx", 0o600));
  } catch (err) {
    throw new DataDirError(`cannot create the database file ${file}: ${(err as Error).message} (make ${dir} writable by this user, or choose another directory with --data)`, { cause: err });
  }
  return file;
}

/** The error for a database file SQLite cannot use, naming it and what to do. */
export function openError(file: string, err: unknown): DataDirError {
  const code = (err as { code?: unknown }).code;
  const msg = (err as Error).message;
  if (code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT") {
    return new DataDirError(`the database file ${file} is not a usable SQLite database (${String(code)}: ${msg}). Restore it from a backup, or move it away to start a new database`, { cause: err });
  }
  if (code === "SQLITE_READONLY" || code === "SQLITE_CANTOPEN" || code === "SQLITE_PERM") {
    return new DataDirError(`cannot write the database file ${file} (${String(code)}: ${msg}): make it and its directory writable by this user`, { cause: err });
  }
  return new DataDirError(`cannot open the database file ${file}: ${msg}`, { cause: err });
}

function tighten(path: string, mode: number, warn?: (message: string) => void): void {
  const st = statSync(path);
  if ((st.mode & 0o777 & ~mode) === 0) return;
  try {
    chmodSync(path, mode);
    warn?.(`${path} was mode ${(st.mode & 0o777).toString(8)}: tightened to ${mode.toString(8)} (it holds password hashes and secrets)`);
  } catch (err) {
    warn?.(`${path} is mode ${(st.mode & 0o777).toString(8)} and could not be tightened to ${mode.toString(8)}: ${(err as Error).message}`);
  }
}
