/**
 * A consistent copy of the embedded store while a server may be writing to it (`blockkit backup`).
 * Copying `blockkit.db` with cp is not one: the newest commits are in `blockkit.db-wal`, and the
 * file changes under the copy. SQLite's online backup API (better-sqlite3's `db.backup()`) copies
 * the pages of one read transaction instead; in WAL mode that reader never blocks the server's
 * writers. The copy is made under a temporary name beside the target, in rollback-journal mode (one
 * self-contained file: checking it later leaves no `-wal` or `-shm` beside it; the server switches a
 * restored copy back to WAL at start), checked (`PRAGMA integrity_check`, the same migrations as the
 * source) and only then renamed to the target, so a failed or interrupted backup never leaves a file
 * under the name the operator gave, nor replaces an older good backup with a broken one.
 */
import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import Database from "better-sqlite3";
import { DB_FILE, DataDirError } from "./files.js";
import { MIGRATIONS } from "./migrations.js";

/** What a backup or a check found in a copy. */
export interface BackupInfo {
  file: string;
  bytes: number;
  /** The migrations applied in the copy, in this version's order (unknown ones last). */
  migrations: string[];
  /** Applied migrations this version of blockkit does not know: the copy is from a newer one. */
  unknown: string[];
}

/** A backup that failed after it started writing; the message says what was removed. */
export class BackupError extends Error {
  override readonly name = "BackupError";
}

/** The schema version of a copy, as printed: the last known migration and the count. */
export function schemaVersion(info: BackupInfo): string {
  const last = info.migrations.filter((m) => !info.unknown.includes(m)).at(-1) ?? "none";
  const newer = info.unknown.length > 0 ? `; from a newer blockkit: ${info.unknown.join(", ")}` : "";
  return `${last} (${info.migrations.length} migrations${newer})`;
}

/** The migrations recorded in a blockkit database; throws when `db` is not one. */
function appliedMigrations(db: Database.Database, file: string): string[] {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (!table) throw new DataDirError(`${file} is a SQLite database but not a blockkit one (it has no schema_migrations table)`);
  const names = new Set(db.prepare("SELECT name FROM schema_migrations").pluck().all() as string[]);
  const known = MIGRATIONS.map((m) => m.name).filter((n) => names.has(n));
  return [...known, ...[...names].filter((n) => !known.includes(n)).sort()];
}

function sqliteError(file: string, err: unknown): Error {
  const code = (err as { code?: unknown }).code;
  if (code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT") {
    return new DataDirError(`${file} is not a usable SQLite database (${String(code)}: ${(err as Error).message})`, { cause: err });
  }
  return err instanceof DataDirError ? err : new DataDirError(`cannot read ${file}: ${(err as Error).message}`, { cause: err });
}

/**
 * Checks a copy without changing it: a blockkit database whose `PRAGMA integrity_check` answers
 * ok. Throws a DataDirError naming the file and what is wrong.
 */
export function checkBackup(file: string): BackupInfo {
  if (!existsSync(file)) throw new DataDirError(`${file} does not exist`);
  const st = statSync(file);
  if (!st.isFile()) throw new DataDirError(`${file} is not a file`);
  if (st.size === 0) throw new DataDirError(`${file} is empty (0 bytes): not a backup`);
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const migrations = appliedMigrations(db, file);
    const problems = (db.pragma("integrity_check") as { integrity_check: string }[]).map((r) => r.integrity_check);
    if (problems.length !== 1 || problems[0] !== "ok") {
      throw new DataDirError(`${file} fails PRAGMA integrity_check: ${problems.slice(0, 5).join("; ")}${problems.length > 5 ? ` (and ${problems.length - 5} more)` : ""}`);
    }
    const known = new Set(MIGRATIONS.map((m) => m.name));
    return { file, bytes: st.size, migrations, unknown: migrations.filter((m) => !known.has(m)) };
  } catch (err) {
    throw sqliteError(file, err);
  } finally {
    db?.close();
  }
}

/** The store's database file in `dataDir`, refused with the reason when it is not there or empty. */
export function sourceFile(dataDir: string): string {
  const file = join(dataDir, DB_FILE);
  if (!existsSync(dataDir)) throw new DataDirError(`no blockkit database at ${file}: the directory ${dataDir} does not exist (check --data/--db)`);
  if (!statSync(dataDir).isDirectory()) throw new DataDirError(`${dataDir} is not a directory (--data names the server's data directory)`);
  if (!existsSync(file)) throw new DataDirError(`no blockkit database at ${file} (check --data/--db: it names the server's data directory)`);
  if (statSync(file).size === 0) throw new DataDirError(`the database file ${file} is empty (0 bytes): there is nothing to back up`);
  return file;
}

/** Removes a partial copy and its rollback journal; true when something was there. */
function removePartial(file: string): boolean {
  let removed = false;
  for (const f of [file, `${file}-journal`]) {
    if (existsSync(f)) removed = true;
    rmSync(f, { force: true });
  }
  return removed;
}

/**
 * Copies the database of `dataDir` to `out` (mode 0600) and checks the copy. `out`'s directory must
 * exist; the caller decides whether an existing `out` may be replaced (`replace`).
 */
export async function backupDataDir(dataDir: string, out: string, o: { replace: boolean }): Promise<BackupInfo> {
  const file = sourceFile(dataDir);
  const partial = join(dirname(out), `.${basename(out)}.partial`);
  let source: Database.Database;
  let before: string[];
  try {
    // Read-write but never written: a read-only connection would leave `-wal` and `-shm` behind
    // when the server is not running (it cannot remove them at close).
    source = new Database(file, { fileMustExist: true });
  } catch (err) {
    throw sqliteError(file, err);
  }
  try {
    source.pragma("busy_timeout = 5000");
    before = appliedMigrations(source, file);
  } catch (err) {
    source.close();
    throw sqliteError(file, err);
  }
  try {
    removePartial(partial);
    // Made here, 0600 like the data files (files.ts), before SQLite opens it: it keeps that mode.
    closeSync(openSync(partial, "w", 0o600));
    // One step copies every page in one read transaction. Steps of 100 pages (the default) would
    // start over after each commit of the server's, and might never end on a busy hub.
    await source.backup(partial, { progress: () => 0x7fffffff });
    const copy = new Database(partial, { fileMustExist: true });
    try {
      copy.pragma("journal_mode = DELETE");
    } finally {
      copy.close();
    }
  } catch (err) {
    source.close();
    throw failed(err, partial, out);
  }
  source.close();
  let info: BackupInfo;
  try {
    info = checkBackup(partial);
  } catch (err) {
    removePartial(partial);
    throw new BackupError(`the copy failed its check, and was removed: ${(err as Error).message}. The database ${file} may be damaged: stop the server and run PRAGMA integrity_check on it`);
  }
  if (info.migrations.join() !== before.join()) {
    removePartial(partial);
    throw new BackupError(`the copy's schema (${info.migrations.at(-1)}) is not the source's (${before.at(-1)}): was the server upgraded during the backup? The copy was removed; run the backup again`);
  }
  if (!o.replace && existsSync(out)) {
    removePartial(partial);
    throw new BackupError(`${out} appeared while the backup ran; the copy was removed (give --force to replace it)`);
  }
  renameSync(partial, out);
  syncDir(dirname(out));
  return { ...info, file: out };
}

function failed(err: unknown, partial: string, out: string): BackupError {
  const removed = removePartial(partial) ? `the partial copy ${partial} was removed` : "nothing was written";
  const code = (err as { code?: unknown }).code;
  if (code === "SQLITE_FULL" || code === "ENOSPC") {
    return new BackupError(`the disk of ${dirname(out)} is full: ${removed}. Free some space there or choose another --out`, { cause: err });
  }
  return new BackupError(`the backup to ${out} failed (${String(code ?? "error")}: ${(err as Error).message}): ${removed}`, { cause: err });
}

/** The rename survives a power cut only once the directory is on disk. */
function syncDir(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
