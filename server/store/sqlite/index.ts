/**
 * The embedded store: one SQLite file in WAL mode with `synchronous=FULL`, so that a committed
 * transaction survives a process kill and a power cut. Block events are committed on the ingest
 * thread (ingest-thread.ts), which reaches the same durability with its own WAL flush.
 */
import Database from "better-sqlite3";
import { unavailable } from "../../errors.js";
import type { Store } from "../types.js";
import { blocksRepo, tokenWrites, tokensRepo, usersRepo } from "./accounts.js";
import { rulesRepo, snapshotsRepo, subDevicesRepo } from "./automation.js";
import { StoreCache } from "./cache.js";
import { callbacksRepo, commandsRepo, devicesRepo, eventsRepo } from "./devices.js";
import { historyRepo, registerFunctions } from "./history.js";
import { keysRepo, oauthAppsRepo, oauthCodesRepo, sessionsRepo } from "./accounts-web.js";
import { MIGRATIONS, type Migration } from "./migrations.js";
import { IngestThread, workerModule } from "./ingest-thread.js";
import { ReadingsStaging, WAL_AUTOCHECKPOINT_PAGES } from "./staging.js";
import { openError, prepareDataDir } from "./files.js";
import { type DataDirLock, lockDataDir } from "./dir-lock.js";
import { outboxRepo } from "./outbox.js";
import { ruleEvalsRepo, ruleJobsRepo } from "./rule-evals.js";
import { MainWriter, throughWriter } from "./writer.js";
import { SchemaError, newerSchema, requireCurrent, schemaState } from "../schema.js";

/**
 * The repositories' methods that only read (or, events.commit, write on the ingest thread; and
 * events.pruneKeys, which takes a turn per batch itself): called as they are. Every other method
 * is a write through the MainWriter when there is an ingest thread (writer.ts).
 */
const READS: Record<string, readonly string[]> = {
  users: ["byName", "byId", "count"],
  tokens: ["find", "list", "revokedSince"],
  sessions: ["find"],
  oauthApps: ["get", "list"],
  blocks: ["get", "list", "awaitingUntil"],
  devices: ["list", "byGuid"],
  events: ["commit", "pruneKeys"],
  commands: ["pending"],
  callbacks: ["get"],
  subdevices: ["get", "byDevices", "match", "actuations", "actuationCount"],
  rules: ["get", "list", "count", "all", "runs"],
  snapshots: ["get"],
  ruleEvals: ["depth"],
  // Its writes take their turn themselves, only when there is something to write (outbox.ts).
  outbox: ["claim", "remove", "retry", "trim", "renew", "depth"],
};
const NOT_REPOS = new Set(["kind", "db", "ingestThread", "writer", "close"]);

export interface SqliteStoreOptions {
  /** Directory that holds `blockkit.db`; created when missing. Use `:memory:` for a throwaway store. */
  dataDir: string;
  /** Create the directory and the database when missing (default true); false for account commands. */
  create?: boolean;
  /** Warnings about the files (modes tightened). */
  warn?: (message: string) => void;
  /**
   * Commit block events on a worker thread with its own connection (ingest-thread.ts). Default
   * true for a file in WAL mode; the main thread commits them otherwise (`:memory:`, or false:
   * one-shot commands such as `users add`). A store with an ingest thread owns its data directory:
   * a second one on the same directory, in this process or another, is refused (dir-lock.ts).
   */
  ingestThread?: boolean;
  /** Where the store reports a failure of its ingest thread. Default: stderr. */
  onError?: (err: Error) => void;
  /**
   * "migrate" (default, the server): apply the pending migrations. "current" (the one-shot
   * commands): change nothing, and refuse a schema that is not this build's (schema.ts); a database
   * this open has just created (`create`) is made whole.
   */
  schema?: "migrate" | "current";
}

/** The migrations a database records; null when it has no schema_migrations table. */
function recorded(db: Database.Database): string[] | null {
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get()) return null;
  return db.prepare("SELECT name FROM schema_migrations").pluck().all() as string[];
}

/** Applies the pending migrations; refuses (SchemaError) a database with migrations this build does not know. */
export function migrate(db: Database.Database, migrations: Migration[] = MIGRATIONS, where = "(in memory)"): string[] {
  const state = schemaState(recorded(db) ?? [], migrations.map((m) => m.name));
  if (state.unknown.length > 0) throw newerSchema(where, state);
  db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied INTEGER NOT NULL)");
  const applied = new Set(state.applied);
  const ran: string[] = [];
  for (const m of migrations) {
    if (applied.has(m.name)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare("INSERT INTO schema_migrations (name, applied) VALUES (?, ?)").run(m.name, Date.now());
    })();
    ran.push(m.name);
  }
  return ran;
}

/** Migrates (the server) or checks (the one-shot commands) the schema of a database just opened. */
function settleSchema(db: Database.Database, file: string, options: SqliteStoreOptions): void {
  const where = `at ${file}`;
  if (options.schema !== "current") {
    migrate(db, MIGRATIONS, where);
    return;
  }
  const names = recorded(db);
  if (names === null) {
    const tables = db.prepare("SELECT count(*) FROM sqlite_master").pluck().get() as number;
    // A database made by this open (prepareDataDir, `users add --create`): nothing runs on it yet.
    if (tables === 0 && options.create === true) {
      migrate(db, MIGRATIONS, where);
      return;
    }
    throw new SchemaError("missing", `${file} is a SQLite database but not a blockkit one (it has no schema_migrations table): check --data/--db`);
  }
  requireCurrent(where, schemaState(names, MIGRATIONS.map((m) => m.name)), `blockkit migrate --data ${options.dataDir}`);
}

export function openSqliteStore(options: SqliteStoreOptions): Store & { db: Database.Database; ingestThread: IngestThread | null; writer: MainWriter | null } {
  let file = ":memory:";
  if (options.dataDir !== ":memory:") file = prepareDataDir(options.dataDir, { create: options.create, warn: options.warn });
  // Before SQLite opens the database: a second server fails here, having touched nothing.
  const lock: DataDirLock | null = file !== ":memory:" && options.ingestThread !== false ? lockDataDir(options.dataDir) : null;
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (err) {
    lock?.release();
    throw unavailable(openError(file, err).message, err);
  }
  let journal: string;
  try {
    journal = db.pragma("journal_mode = WAL", { simple: true }) as string;
    db.pragma("synchronous = FULL");
    db.pragma("foreign_keys = ON");
    db.pragma("busy_timeout = 5000");
    // The same on this connection: with its default (1,000) its next write would checkpoint the
    // ingest thread's WAL on the event loop.
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    registerFunctions(db);
    settleSchema(db, file, options);
  } catch (err) {
    if (db.open) db.close();
    lock?.release();
    throw err instanceof SchemaError ? err : openError(file, err);
  }
  const cache = new StoreCache();
  const wal = file !== ":memory:" && journal === "wal";
  const thread =
    wal && options.ingestThread !== false
      ? new IngestThread(workerModule(), file, options.onError ?? ((err) => process.stderr.write(`blockkit store: ingest thread failed: ${err.message}\n`)))
      : null;
  const staging = new ReadingsStaging(db, { stagedElsewhere: thread !== null });
  const writes = tokenWrites(db);
  // With an ingest thread, the event loop's writes take turns with it and never wait in SQLite's
  // busy handler (writer.ts); without one (`:memory:`, one-shot commands) nothing else writes here.
  const writer = thread ? new MainWriter(db, thread) : null;
  if (writer) db.pragma("busy_timeout = 0");
  const write = writer ? <T>(fn: () => T | Promise<T>): Promise<T> => writer.run(fn) : async <T>(fn: () => T | Promise<T>): Promise<T> => fn();
  const store = {
    kind: "sqlite" as const,
    db,
    ingestThread: thread,
    writer,
    sessions: sessionsRepo(db),
    oauthApps: oauthAppsRepo(db),
    oauthCodes: oauthCodesRepo(db),
    keys: keysRepo(db),
    users: usersRepo(db),
    tokens: tokensRepo(db, writes),
    blocks: blocksRepo(db, cache, writes),
    devices: devicesRepo(db, cache),
    events: eventsRepo(db, cache, staging, thread, write),
    history: historyRepo(db, staging),
    commands: commandsRepo(db),
    callbacks: callbacksRepo(db),
    subdevices: subDevicesRepo(db),
    rules: rulesRepo(db),
    snapshots: snapshotsRepo(db),
    outbox: outboxRepo(db, writer),
    ruleJobs: ruleJobsRepo(db),
    ruleEvals: ruleEvalsRepo(db),
    async close() {
      try {
        await thread?.close();
        staging.close();
        if (db.open) db.close();
      } finally {
        lock?.release();
      }
    },
  };
  if (writer) {
    // Every repository, including one added later: its writes through the writer by default.
    for (const [name, value] of Object.entries(store)) {
      if (NOT_REPOS.has(name) || typeof value !== "object" || value === null) continue;
      (store as Record<string, unknown>)[name] = throughWriter(value, writer, READS[name] ?? []);
    }
  }
  return store;
}
