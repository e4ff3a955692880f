/**
 * The PostgreSQL store: several server instances on one database. A pg Pool with named (prepared)
 * statements, `synchronous_commit = on` on every connection (a commit is acknowledged once it is
 * durable), versioned migrations applied at open under an advisory lock, readings partitioned by
 * day, week or month (partitions.ts), block events in group commit (events.ts).
 */
import type pg from "pg";
import { unavailable } from "../../errors.js";
import type { Store } from "../types.js";
import { blocksRepo, keysRepo, oauthAppsRepo, oauthCodesRepo, sessionsRepo, tokensRepo, usersRepo } from "./accounts.js";
import { rulesRepo, snapshotsRepo, subDevicesRepo } from "./automation.js";
import { createPool, isConnectionError, splitSchema } from "./db.js";
import { callbacksRepo, commandsRepo, devicesRepo } from "./devices.js";
import { PgEvents } from "./events.js";
import { historyRepo } from "./history.js";
import { outboxRepo, ruleEvalsRepo, ruleJobsRepo } from "./leases.js";
import { PG_MIGRATIONS, type PgMigration } from "./migrations.js";
import type { PartitionInterval } from "./partition-ranges.js";
import { ReadingPartitions } from "./partitions.js";
import { SchemaError, newerSchema, requireCurrent, schemaState } from "../schema.js";

export interface PostgresStoreOptions {
  /** postgres://… (a `schema` query parameter selects a schema, created when missing). */
  url: string;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /** Readings older than this are dropped, a partition at a time. Default: kept forever. */
  retentionMs?: number | null;
  /** The readings partitions' interval asked for; a database made with another one refuses it. Default: the database's. */
  partitionInterval?: PartitionInterval;
  /**
   * "migrate" (default, the server): apply the pending migrations and keep the readings partitions.
   * "current" (the one-shot commands): change nothing (no migration, no partition), and refuse a
   * schema that is not this build's (../schema.ts); with `create`, a database without any blockkit
   * schema is made whole first.
   */
  schema?: "migrate" | "current";
  /** With schema "current": make the schema when the database (or `schema` parameter's schema) has none. */
  create?: boolean;
}

export type PostgresStore = Store & { pool: pg.Pool; partitions: ReadingPartitions; eventsStats: PgEvents["stats"] };

/**
 * Applies the migrations not yet applied; returns their names. Serialised across instances. Refuses
 * (SchemaError) a database with migrations this build does not know; `where` names the store then.
 */
export async function migratePostgres(
  pool: pg.Pool,
  schema: string | null,
  o: { migrations?: PgMigration[]; where?: string } = {},
): Promise<string[]> {
  const migrations = o.migrations ?? PG_MIGRATIONS;
  const where = o.where ?? "on PostgreSQL";
  const c = await pool.connect();
  try {
    await c.query("BEGIN");
    await c.query("SELECT pg_advisory_xact_lock(hashtext('blockkit:migrate'))");
    if (schema) {
      await c.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await c.query(`SET LOCAL search_path = ${schema}`);
    }
    await c.query("CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied bigint NOT NULL)");
    const applied = new Set((await c.query<{ name: string }>("SELECT name FROM schema_migrations")).rows.map((r) => r.name));
    const state = schemaState(applied, migrations.map((m) => m.name));
    if (state.unknown.length > 0) throw newerSchema(where, state);
    const ran: string[] = [];
    for (const m of migrations) {
      if (applied.has(m.name)) continue;
      await c.query(m.sql);
      await c.query("INSERT INTO schema_migrations (name, applied) VALUES ($1, $2)", [m.name, Date.now()]);
      ran.push(m.name);
    }
    await c.query("COMMIT");
    return ran;
  } catch (err) {
    await c.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    c.release();
  }
}

/** A store URL as messages show it: host, database and schema, never the password. */
export function shownUrl(url: string): string {
  const u = new URL(url);
  const { schema } = splitSchema(url);
  return `${u.protocol}//${u.host}${u.pathname}${schema ? ` (schema ${schema})` : ""}`;
}

/** The one-shot commands' open: the schema checked, never changed; with `create`, made when there is none. */
async function requireCurrentPg(pool: pg.Pool, options: PostgresStoreOptions, shown: string): Promise<void> {
  const table = await pool.query<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t");
  if (table.rows[0]?.t == null) {
    if (options.create === true) {
      await migratePostgres(pool, splitSchema(options.url).schema, { where: `at ${shown}` });
      return;
    }
    throw new SchemaError("missing", `no blockkit database at ${shown}: it has no schema_migrations table (check --db, or pass --create to start a new database there)`);
  }
  const names = (await pool.query<{ name: string }>("SELECT name FROM schema_migrations")).rows.map((r) => r.name);
  const u = new URL(options.url);
  // The command it names is printed: no password in it, given in the userinfo or as a parameter.
  if (u.password !== "") u.password = "***";
  for (const key of ["password", "sslpassword"]) if (u.searchParams.has(key)) u.searchParams.set(key, "***");
  requireCurrent(`at ${shown}`, schemaState(names, PG_MIGRATIONS.map((m) => m.name)), `blockkit migrate --db ${u.toString()}`);
}

export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const { schema } = splitSchema(options.url);
  const pool = createPool({ url: options.url, max: options.poolSize });
  const partitions = new ReadingPartitions(pool, { retentionMs: options.retentionMs ?? null, interval: options.partitionInterval });
  const shown = shownUrl(options.url);
  try {
    if (options.schema === "current") await requireCurrentPg(pool, options, shown);
    else {
      await migratePostgres(pool, schema, { where: `at ${shown}` });
      await partitions.start();
    }
  } catch (err) {
    partitions.stop();
    await pool.end().catch(() => undefined);
    if (isConnectionError(err)) throw unavailable(`cannot reach the PostgreSQL store at ${shown}: ${(err as Error).message}`, err);
    throw err;
  }
  const events = new PgEvents(pool, partitions);
  return {
    kind: "postgres",
    pool,
    partitions,
    eventsStats: events.stats,
    sessions: sessionsRepo(pool),
    oauthApps: oauthAppsRepo(pool),
    oauthCodes: oauthCodesRepo(pool),
    keys: keysRepo(pool),
    users: usersRepo(pool),
    tokens: tokensRepo(pool),
    blocks: blocksRepo(pool),
    devices: devicesRepo(pool),
    events,
    history: historyRepo(pool),
    commands: commandsRepo(pool),
    callbacks: callbacksRepo(pool),
    subdevices: subDevicesRepo(pool),
    rules: rulesRepo(pool),
    snapshots: snapshotsRepo(pool),
    outbox: outboxRepo(pool),
    ruleJobs: ruleJobsRepo(pool),
    ruleEvals: ruleEvalsRepo(pool),
    async close() {
      partitions.stop();
      await events.close();
      await pool.end();
    },
  };
}
