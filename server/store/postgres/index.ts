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

export interface PostgresStoreOptions {
  /** postgres://… (a `schema` query parameter selects a schema, created when missing). */
  url: string;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /** Readings older than this are dropped, a partition at a time. Default: kept forever. */
  retentionMs?: number | null;
  /** The readings partitions' interval asked for; a database made with another one refuses it. Default: the database's. */
  partitionInterval?: PartitionInterval;
}

export type PostgresStore = Store & { pool: pg.Pool; partitions: ReadingPartitions; eventsStats: PgEvents["stats"] };

/** Applies the migrations not yet applied; returns their names. Serialised across instances. */
export async function migratePostgres(pool: pg.Pool, schema: string | null, migrations: PgMigration[] = PG_MIGRATIONS): Promise<string[]> {
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

export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const { schema } = splitSchema(options.url);
  const pool = createPool({ url: options.url, max: options.poolSize });
  const partitions = new ReadingPartitions(pool, { retentionMs: options.retentionMs ?? null, interval: options.partitionInterval });
  try {
    await migratePostgres(pool, schema);
    await partitions.start();
  } catch (err) {
    partitions.stop();
    await pool.end().catch(() => undefined);
    const where = new URL(options.url);
    const shown = `${where.protocol}//${where.host}${where.pathname}`;
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
