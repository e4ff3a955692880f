/**
 * The store's schema version against the command line's, with real processes on a real SQLite file
 * and the real PostgreSQL (server/store/schema.ts, cli/store-open.ts): `users`, `apps add` and
 * `export` never migrate, so a store behind this build is refused (exit 2, both versions and
 * `blockkit migrate` named) and left as it was, where they used to migrate it under a server of the
 * older version; a store ahead of this build (a newer blockkit wrote it) is refused by them, by
 * `blockkit migrate` and by the server, which used to run on it; on PostgreSQL a database without
 * a blockkit schema is refused too, where `users token` used to create the schema, and
 * `users add --create` makes it whole, as on SQLite; `blockkit import` refuses a store in use before
 * migrating it, where it used to migrate it and then refuse.
 */
import { once } from "node:events";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { PG_MIGRATIONS } from "../../server/store/postgres/migrations.js";
import { migrate } from "../../server/store/sqlite/index.js";
import { MIGRATIONS } from "../../server/store/sqlite/migrations.js";
import { PG_AVAILABLE, PG_BASE_URL, pgSchemaUrl } from "../helpers/pg.js";
import { type CliProcess, spawnCli, startServerProcess, stopProcess } from "../helpers/process.js";

const root = mkdtempSync(join(tmpdir(), "blockkit-schema-"));
const procs: CliProcess[] = [];
afterEach(async () => {
  for (const p of procs.splice(0)) await stopProcess(p, "SIGKILL");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = (): string => join(root, `d${n++}`);

const FUTURE = "999-from-a-newer-blockkit";
const ADMIN = "schema-admin-token-000001";
const SQLITE_LATEST = MIGRATIONS.at(-1)?.name as string;
const SQLITE_BEHIND = MIGRATIONS.at(-2)?.name as string;
const PG_LATEST = PG_MIGRATIONS.at(-1)?.name as string;
const PG_BEHIND = PG_MIGRATIONS.at(-2)?.name as string;

/** Runs `blockkit ...args` to its end (BLOCKKIT_DB unset: the flags name the store). */
async function blockkit(args: string[]): Promise<{ code: number | string; err: string; out: string }> {
  const p = spawnCli(args, { BLOCKKIT_DB: undefined });
  procs.push(p);
  await once(p.child, "close");
  return { code: await p.exited, err: p.stderr.join("\n"), out: p.stdout.join("\n") };
}

/** The one-shot store commands, each on `store` (`--data DIR` or `--db URL`). */
const commands = (store: string[]): string[][] => [
  ["users", "add", "bob", "--password", "a long password", ...store],
  ["users", "passwd", "admin", "--password", "a long password", ...store],
  ["users", "token", "admin", ...store],
  ["apps", "add", "--user", "admin", "--name", "Garden", "--redirect-uri", "https://garden.example/cb", ...store],
];

/** A SQLite store with user admin and the migrations up to `upTo` (index in MIGRATIONS), plus `extra` recorded. */
function sqliteStore(upTo: number, extra: string[] = []): string {
  const dir = fresh();
  mkdirSync(dir, { mode: 0o700 });
  const db = new Database(join(dir, "blockkit.db"));
  try {
    db.pragma("journal_mode = WAL");
    migrate(db, MIGRATIONS.slice(0, upTo));
    db.prepare("INSERT INTO users (name, created) VALUES ('admin', 1)").run();
    for (const name of extra) db.prepare("INSERT INTO schema_migrations (name, applied) VALUES (?, 1)").run(name);
  } finally {
    db.close();
  }
  return dir;
}

/** What a SQLite store records: its migrations, users, tokens and applications. */
function sqliteContents(dir: string): { migrations: string[]; users: string[]; rows: number } {
  const db = new Database(join(dir, "blockkit.db"), { readonly: true });
  try {
    return {
      migrations: db.prepare("SELECT name FROM schema_migrations ORDER BY name").pluck().all() as string[],
      users: db.prepare("SELECT name FROM users ORDER BY name").pluck().all() as string[],
      rows: db.prepare("SELECT (SELECT count(*) FROM tokens) + (SELECT count(*) FROM oauth_apps) + (SELECT count(*) FROM users WHERE password_hash IS NOT NULL)").pluck().get() as number,
    };
  } finally {
    db.close();
  }
}

describe("the one-shot store commands on SQLite", () => {
  it("refuse a store behind this build (exit 2, both versions, blockkit migrate named) and leave it as it was", { timeout: 60_000 }, async () => {
    const dir = sqliteStore(MIGRATIONS.length - 1);
    const before = sqliteContents(dir);
    expect(before.migrations.at(-1)).toBe(SQLITE_BEHIND);
    for (const args of [...commands(["--data", dir]), ["export", "--data", dir]]) {
      const r = await blockkit(args);
      expect(r.code, `${args.join(" ")}: ${r.err}`).toBe(2);
      expect(r.err).toContain(`has schema ${SQLITE_BEHIND}, older than this blockkit`);
      expect(r.err).toContain(`expects (${SQLITE_LATEST}; pending: ${SQLITE_LATEST})`);
      expect(r.err).toContain(`blockkit migrate --data ${dir}`);
      expect(r.err).not.toContain("--help");
      expect(r.out).toBe("");
    }
    expect(sqliteContents(dir)).toEqual(before);
    // The explicit command migrates; then they go through.
    expect((await blockkit(["migrate", "--data", dir])).code).toBe(0);
    const token = await blockkit(["users", "token", "admin", "--data", dir]);
    expect(token.code, token.err).toBe(0);
    expect(sqliteContents(dir).migrations.at(-1)).toBe(SQLITE_LATEST);
  });

  it("refuse a store a newer blockkit wrote, as do blockkit migrate and the server, and none changes it", { timeout: 60_000 }, async () => {
    const dir = sqliteStore(MIGRATIONS.length, [FUTURE]);
    const before = sqliteContents(dir);
    for (const args of [...commands(["--data", dir]), ["export", "--data", dir], ["migrate", "--data", dir]]) {
      const r = await blockkit(args);
      expect(r.code, `${args.join(" ")}: ${r.err}`).toBe(2);
      expect(r.err).toContain(`has schema ${FUTURE}, newer than this blockkit (`);
      expect(r.err).toContain(`knows (${SQLITE_LATEST}; unknown migrations: ${FUTURE})`);
      expect(r.out).toBe("");
    }
    const server = await blockkit(["server", "--port", "0", "--stream-port", "0", "--data", dir, "--admin-token", ADMIN]);
    expect(server.code, server.err).toBe(2);
    expect(server.out).not.toMatch(/ready|base_url/);
    expect(server.err).toContain(`blockkit server: the store at ${join(dir, "blockkit.db")} has schema ${FUTURE}, newer than this blockkit`);
    expect(server.err, "a refusal, not a crash: no stack trace").not.toContain("    at ");
    expect(sqliteContents(dir)).toEqual(before);
  });
});

/**
 * PostgreSQL: a schema of its own with the migrations up to `upTo` and user admin, plus `extra`
 * recorded, made as an older (or newer) blockkit would have left it.
 */
async function pgStore(upTo: number, extra: string[] = []): Promise<ReturnType<typeof pgSchemaUrl>> {
  const db = pgSchemaUrl();
  const client = new pg.Client({ connectionString: PG_BASE_URL });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA ${db.schema}`);
    await client.query(`SET search_path = ${db.schema}`);
    await client.query("CREATE TABLE schema_migrations (name text PRIMARY KEY, applied bigint NOT NULL)");
    for (const m of PG_MIGRATIONS.slice(0, upTo)) {
      await client.query(m.sql);
      await client.query("INSERT INTO schema_migrations (name, applied) VALUES ($1, 1)", [m.name]);
    }
    await client.query("INSERT INTO users (name, created) VALUES ('admin', 1)");
    for (const name of extra) await client.query("INSERT INTO schema_migrations (name, applied) VALUES ($1, 1)", [name]);
  } finally {
    await client.end();
  }
  return db;
}

/** What a PostgreSQL schema holds: its migrations, users, the rows the commands write, its tables. */
async function pgContents(schema: string): Promise<{ migrations: string[]; users: string[]; rows: number; tables: string[] }> {
  const client = new pg.Client({ connectionString: PG_BASE_URL });
  await client.connect();
  try {
    const tables = (await client.query<{ t: string }>("SELECT table_name AS t FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1", [schema])).rows.map((r) => r.t);
    if (!tables.includes("schema_migrations")) return { migrations: [], users: [], rows: 0, tables };
    const one = async (sql: string): Promise<string[]> => (await client.query<{ v: string }>(sql)).rows.map((r) => String(r.v));
    return {
      migrations: await one(`SELECT name AS v FROM ${schema}.schema_migrations ORDER BY name`),
      users: await one(`SELECT name AS v FROM ${schema}.users ORDER BY name`),
      rows: Number((await one(`SELECT (SELECT count(*) FROM ${schema}.tokens) + (SELECT count(*) FROM ${schema}.oauth_apps) + (SELECT count(*) FROM ${schema}.users WHERE password_hash IS NOT NULL) AS v`))[0]),
      tables,
    };
  } finally {
    await client.end();
  }
}

describe.skipIf(!PG_AVAILABLE)("the one-shot store commands on PostgreSQL", () => {
  it("refuse a store behind this build (exit 2, both versions, blockkit migrate named) and leave it as it was", { timeout: 60_000 }, async () => {
    const db = await pgStore(PG_MIGRATIONS.length - 1);
    try {
      const before = await pgContents(db.schema);
      expect(before.migrations.at(-1)).toBe(PG_BEHIND);
      for (const args of commands(["--db", db.url])) {
        const r = await blockkit(args);
        expect(r.code, `${args.join(" ")}: ${r.err}`).toBe(2);
        expect(r.err).toContain(`(schema ${db.schema}) has schema ${PG_BEHIND}, older than this blockkit`);
        expect(r.err).toContain(`expects (${PG_LATEST}; pending: ${PG_LATEST})`);
        expect(r.err).toContain(`blockkit migrate --db ${db.url}`);
        expect(r.out).toBe("");
      }
      // The command it names is printed without a password given as a parameter (trust auth here ignores it).
      const withPassword = `${db.url}${db.url.includes("?") ? "&" : "?"}password=hunter2-secret`;
      const masked = await blockkit([...(commands(["--db", withPassword])[0] as string[])]);
      expect(masked.code, masked.err).toBe(2);
      expect(masked.err).toContain("blockkit migrate --db ");
      expect(masked.err).toContain("password=***");
      expect(masked.err).not.toContain("hunter2-secret");
      // No migration, and no readings partition either (the server makes those).
      expect(await pgContents(db.schema)).toEqual(before);
      expect((await blockkit(["migrate", "--db", db.url])).code).toBe(0);
      const token = await blockkit(["users", "token", "admin", "--db", db.url]);
      expect(token.code, token.err).toBe(0);
    } finally {
      await db.drop();
    }
  });

  it("refuse a store a newer blockkit wrote, as do blockkit migrate and the server, and none changes it", { timeout: 60_000 }, async () => {
    const db = await pgStore(PG_MIGRATIONS.length, [FUTURE]);
    try {
      const before = await pgContents(db.schema);
      for (const args of [...commands(["--db", db.url]), ["migrate", "--db", db.url]]) {
        const r = await blockkit(args);
        expect(r.code, `${args.join(" ")}: ${r.err}`).toBe(2);
        expect(r.err).toContain(`(schema ${db.schema}) has schema ${FUTURE}, newer than this blockkit (`);
        expect(r.err).toContain(`knows (${PG_LATEST}; unknown migrations: ${FUTURE})`);
        expect(r.out).toBe("");
      }
      const server = await blockkit(["server", "--port", "0", "--stream-port", "0", "--data", fresh(), "--db", db.url, "--admin-token", ADMIN]);
      expect(server.code, server.err).toBe(2);
      expect(server.out).not.toMatch(/ready|base_url/);
      expect(server.err).toMatch(/blockkit server: the store at postgres:\/\/.* has schema 999-from-a-newer-blockkit, newer than this blockkit/);
      expect(server.err, "a refusal, not a crash: no stack trace").not.toContain("    at ");
      expect(await pgContents(db.schema)).toEqual(before);
    } finally {
      await db.drop();
    }
  });

  it("blockkit import refuses a store in use (it has users) before migrating it", { timeout: 30_000 }, async () => {
    const db = await pgStore(PG_MIGRATIONS.length - 1);
    try {
      const before = await pgContents(db.schema);
      const r = await blockkit(["import", "--db", db.url]);
      expect(r.code, r.err).toBe(1);
      expect(r.err).toContain("the target store is not empty: import only into a new database (or schema)");
      expect(await pgContents(db.schema)).toEqual(before);
    } finally {
      await db.drop();
    }
  });

  it("refuse a database without a blockkit schema, creating nothing, until users add --create makes it whole", { timeout: 60_000 }, async () => {
    const db = pgSchemaUrl();
    try {
      for (const args of [...commands(["--db", db.url]).filter((a) => a[1] !== "add" || a[0] === "apps"), ["users", "add", "bob", "--db", db.url]]) {
        const r = await blockkit(args);
        expect(r.code, `${args.join(" ")}: ${r.err}`).toBe(1);
        expect(r.err).toContain(`no blockkit database at postgres://`);
        expect(r.err).toContain(`(schema ${db.schema}): it has no schema_migrations table (check --db`);
        expect(r.out).toBe("");
      }
      expect((await pgContents(db.schema)).tables).toEqual([]);
      const made = await blockkit(["users", "add", "bob", "--password", "a long password", "--db", db.url, "--create"]);
      expect(made.code, made.err).toBe(0);
      const after = await pgContents(db.schema);
      expect(after.migrations).toEqual(PG_MIGRATIONS.map((m) => m.name).sort());
      expect(after.users).toEqual(["bob"]);
      // The first start of a server on it: bob's token works, and no admin is made (the store has a user).
      const srv = await startServerProcess({ dataDir: fresh(), adminToken: ADMIN, extraArgs: ["--db", db.url] });
      procs.push(srv);
      const devices = await fetch(`${srv.baseUrl}/devices?user_access_token=${made.out.trim()}`);
      expect(devices.status).toBe(200);
      expect(await stopProcess(srv)).toBe(0);
      expect((await pgContents(db.schema)).users).toEqual(["bob"]);
    } finally {
      await db.drop();
    }
  });
});
