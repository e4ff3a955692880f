/**
 * Moving an embedded store into PostgreSQL: `blockkit export` writes every table of a SQLite store
 * as JSON lines (`{"t": table, "r": row}`, after a header line), `blockkit import` loads them into an
 * empty PostgreSQL store in one transaction, converting SQLite's columns (integer flags, JSON text,
 * blobs) to the PostgreSQL ones, keeping every id, and moving the identity sequences past them.
 * Tokens, passwords and secrets travel as the hashes they are stored as.
 */
import type { Database } from "better-sqlite3";
import type pg from "pg";
import { createPool, splitSchema } from "./postgres/db.js";
import { migratePostgres, shownUrl } from "./postgres/index.js";
import { coverTimestamps, listPartitions } from "./postgres/partitions.js";

export const DUMP_HEADER = { blockkit_dump: 1 };

/**
 * Tables in an order that satisfies every foreign key, with how to read them from SQLite. Left out:
 * `token_revocations`, SQLite's hour-long log of deleted token hashes, by which its processes tell
 * each other's token caches what to drop. PostgreSQL has no such table (revocations go over the
 * Bus), the target's servers start with empty caches, and a deleted token is not in `tokens`: it
 * cannot authenticate after the move.
 */
const TABLES: { name: string; select: string }[] = [
  { name: "users", select: "SELECT * FROM users ORDER BY id" },
  { name: "tokens", select: "SELECT * FROM tokens" },
  { name: "blocks", select: "SELECT * FROM blocks" },
  { name: "devices", select: "SELECT * FROM devices ORDER BY id" },
  {
    name: "readings",
    select: "SELECT device_id, ts, num, da FROM (SELECT device_id, ts, num, da, 0 AS s, rowid AS o FROM readings UNION ALL SELECT device_id, ts, num, da, 1, id FROM readings_staged) ORDER BY s, o",
  },
  { name: "event_keys", select: "SELECT * FROM event_keys" },
  { name: "commands", select: "SELECT * FROM commands ORDER BY id" },
  { name: "callbacks", select: "SELECT * FROM callbacks" },
  { name: "subdevices", select: "SELECT * FROM subdevices ORDER BY id" },
  { name: "subdevice_actuations", select: "SELECT subdevice_id, ts FROM subdevice_actuations ORDER BY rowid" },
  { name: "rules", select: "SELECT * FROM rules ORDER BY id" },
  { name: "rule_runs", select: "SELECT * FROM rule_runs ORDER BY id" },
  { name: "camera_snapshots", select: "SELECT * FROM camera_snapshots" },
  { name: "sessions", select: "SELECT * FROM sessions" },
  { name: "oauth_apps", select: "SELECT * FROM oauth_apps" },
  { name: "oauth_codes", select: "SELECT * FROM oauth_codes" },
  { name: "server_keys", select: "SELECT * FROM server_keys" },
  { name: "activation_waits", select: "SELECT * FROM activation_waits" },
  { name: "sequences", select: "SELECT * FROM sequences" },
];

/** SQLite row -> the JSON that json_populate_recordset turns into a PostgreSQL row. */
function convert(table: string, r: Record<string, unknown>): Record<string, unknown> {
  const out = { ...r };
  const bool = (k: string): void => {
    if (k in out) out[k] = out[k] === 1 || out[k] === true;
  };
  const json = (k: string): void => {
    if (typeof out[k] === "string") out[k] = JSON.parse(out[k] as string) as unknown;
  };
  if (table === "devices") {
    bool("is_silent");
    json("meta");
  } else if (table === "rules") {
    bool("suspended");
    json("preconditions");
    json("actions");
  } else if (table === "rule_runs") {
    bool("ok");
    json("steps");
  } else if (table === "oauth_codes") bool("used");
  else if (table === "camera_snapshots") out.body = `\\x${(r.body as Buffer).toString("hex")}`;
  return out;
}

/** Writes the dump of an open SQLite database, line by line. */
export function exportSqlite(db: Database, write: (line: string) => void): Record<string, number> {
  const counts: Record<string, number> = {};
  write(JSON.stringify(DUMP_HEADER));
  for (const t of TABLES) {
    let n = 0;
    for (const row of db.prepare(t.select).iterate() as Iterable<Record<string, unknown>>) {
      write(JSON.stringify({ t: t.name, r: convert(t.name, row) }));
      n++;
    }
    counts[t.name] = n;
  }
  return counts;
}

const BATCH = 2000;
const NOT_EMPTY = "the target store is not empty: import only into a new database (or schema)";

/** True when the database (the URL's schema) already has a users table with a row in it. */
async function hasUsers(pool: pg.Pool): Promise<boolean> {
  const table = await pool.query<{ t: string | null }>("SELECT to_regclass('users')::text AS t");
  if (table.rows[0]?.t == null) return false;
  return (await pool.query<{ used: boolean }>("SELECT EXISTS (SELECT 1 FROM users) AS used")).rows[0]?.used === true;
}

/** Loads a dump into an empty PostgreSQL store (migrated first); one transaction. Returns rows per table. */
export async function importIntoPostgres(url: string, lines: AsyncIterable<string>): Promise<Record<string, number>> {
  const pool = createPool({ url, max: 2 });
  const counts: Record<string, number> = {};
  try {
    // Refused before the migration too: migrating a store in use (an older version's servers on it)
    // would change the schema under them, and the import would then refuse it anyway.
    if (await hasUsers(pool)) throw new Error(NOT_EMPTY);
    await migratePostgres(pool, splitSchema(url).schema, { where: `at ${shownUrl(url)}` });
    const c = await pool.connect();
    try {
      await c.query("BEGIN");
      const users = await c.query<{ n: number }>("SELECT count(*) AS n FROM users");
      if ((users.rows[0] as { n: number }).n > 0) throw new Error(NOT_EMPTY);
      let months: (readonly [number, number])[] = [];
      let table = "";
      let rows: Record<string, unknown>[] = [];
      let rulesSeq = 0;
      const flush = async (): Promise<void> => {
        if (rows.length === 0) return;
        if (table === "readings") {
          for (const r of rows) {
            const ts = r.ts as number;
            if (months.some(([from, to]) => ts >= from && ts < to)) continue;
            // Monthly partitions for the past, fitted between those the target already has.
            await coverTimestamps(c, [ts], "month", Date.now());
            months = (await listPartitions(c)).map((p) => p.range);
          }
        }
        await insert(c, table, rows);
        counts[table] = (counts[table] ?? 0) + rows.length;
        rows = [];
      };
      let first = true;
      for await (const line of lines) {
        if (line.trim() === "") continue;
        const item = JSON.parse(line) as { t?: string; r?: Record<string, unknown>; blockkit_dump?: number };
        if (first) {
          if (item.blockkit_dump !== 1) throw new Error("not a blockkit dump (the first line is not its header)");
          first = false;
          continue;
        }
        if (typeof item.t !== "string" || !item.r) throw new Error(`a dump line is not {"t", "r"}: ${line.slice(0, 80)}`);
        if (item.t === "sequences") {
          if (item.r.name === "rules") rulesSeq = Number(item.r.value);
          continue;
        }
        if (item.t !== table) {
          await flush();
          table = item.t;
        }
        rows.push(item.r);
        if (rows.length >= BATCH) await flush();
      }
      await flush();
      if (first) throw new Error("the dump is empty");
      // Identities continue after the ids imported (and rule ids after every rule ever made).
      for (const t of ["users", "devices", "commands", "subdevices", "subdevice_actuations", "rules", "rule_runs"]) {
        const floor = t === "rules" ? rulesSeq : 0;
        await c.query(`SELECT setval(pg_get_serial_sequence('${t}', 'id'), greatest((SELECT coalesce(max(id), 0) FROM ${t}), $1, 1))`, [floor]);
      }
      await c.query("SELECT setval('readings_seq', greatest((SELECT count(*) FROM readings), 1))");
      await c.query("COMMIT");
    } catch (err) {
      await c.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  } finally {
    await pool.end();
  }
  return counts;
}

async function insert(c: pg.PoolClient, table: string, rows: Record<string, unknown>[]): Promise<void> {
  if (!/^[a-z_]+$/.test(table)) throw new Error(`unknown table "${table}" in the dump`);
  const cols = Object.keys(rows[0] as Record<string, unknown>).filter((k) => /^[a-z_]+$/.test(k));
  const list = cols.join(", ");
  await c.query(`INSERT INTO ${table} (${list}) SELECT ${list} FROM json_populate_recordset(NULL::${table}, $1::json)`, [JSON.stringify(rows)]);
}
