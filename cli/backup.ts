/**
 * `blockkit backup --out FILE`: a consistent copy of an embedded SQLite store, taken while the server
 * may be running (server/store/sqlite/backup.ts), and `blockkit backup --check FILE`, which checks a
 * copy without restoring it. A PostgreSQL store is refused: pg_dump is its tool. Restore:
 * docs/operations.md, "Backups and upgrades".
 */
import { accessSync, constants, existsSync, realpathSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import { CliError } from "./errors.js";
import { dbUrl, storeLocation } from "./options.js";

interface BackupFlags {
  data: string;
  db?: string;
  out?: string;
  force?: boolean;
  check?: string;
}

/** The target of --out, checked before anything is read: a usage error (exit 2) names what is wrong. */
function outFile(out: string, force: boolean, dataDir: string): string {
  const file = resolve(out);
  const dir = dirname(file);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new CliError(`--out: the directory ${dir} does not exist (create it first)`);
  try {
    accessSync(dir, constants.W_OK);
  } catch (err) {
    throw new CliError(`--out: cannot write in ${dir} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): choose a directory this user may write`);
  }
  if (existsSync(file)) {
    if (statSync(file).isDirectory()) throw new CliError(`--out: ${file} is a directory: name the backup file, e.g. ${join(file, "blockkit.db")}`);
    if (!force) throw new CliError(`--out: ${file} exists: give --force to replace it, or another file`);
  }
  // The live database (or its -wal/-shm) as the target would be replaced under the server.
  if (existsSync(dataDir) && realpathSync(dir) === realpathSync(dataDir) && /^blockkit\.(db|db-wal|db-shm|lock)$/.test(file.slice(dir.length + 1))) {
    throw new CliError(`--out: ${file} is one of the store's own files: write the backup elsewhere`);
  }
  return file;
}

type BackupModule = typeof import("../server/store/sqlite/backup.js");

/** What the command prints about a copy: path, size, schema version, the check. */
function summary(m: BackupModule, info: ReturnType<BackupModule["checkBackup"]>): string {
  return `${info.file}: ${info.bytes} bytes, schema ${m.schemaVersion(info)}, integrity ok`;
}

export function registerBackup(program: Command): void {
  program
    .command("backup")
    .description("copy an embedded SQLite store consistently while the server may run, and check the copy; or check a copy (--check)")
    .option("--data <dir>", "directory of the embedded SQLite store", "./data")
    .option("--db <url>", "store URL: sqlite:DIR or a directory (default: BLOCKKIT_DB, else --data)", dbUrl)
    .option("--out <file>", "the backup file to write (mode 0600); an existing file is refused without --force")
    .option("--force", "replace an existing --out (only once the new copy is written and checked)")
    .option("--check <file>", "check a backup without restoring it (integrity, blockkit schema) and exit")
    .action(async (flags: BackupFlags) => {
      const backup = await import("../server/store/sqlite/backup.js");
      if (flags.check !== undefined) {
        if (flags.out !== undefined || flags.force === true) throw new CliError("--check reads a backup: give it alone, without --out or --force");
        process.stdout.write(`checked ${summary(backup, backup.checkBackup(resolve(flags.check)))}\n`);
        return;
      }
      const { parseStoreUrl } = await import("../server/store/url.js");
      const where = parseStoreUrl(storeLocation(flags).url);
      if (where.kind === "postgres") {
        throw new CliError(
          "blockkit backup copies the embedded SQLite store only; a PostgreSQL store is backed up with PostgreSQL's own tools: pg_dump --format=custom (and pg_restore), see docs/operations.md",
        );
      }
      if (flags.out === undefined) throw new CliError("--out FILE is required: where to write the backup");
      const out = outFile(flags.out, flags.force === true, where.dir);
      const info = await backup.backupDataDir(where.dir, out, { replace: flags.force === true });
      process.stdout.write(`wrote ${summary(backup, info)}\n`);
    });
}
