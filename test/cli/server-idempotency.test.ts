/**
 * `blockkit server --idempotency-retention` (and BLOCKKIT_IDEMPOTENCY_RETENTION) in real processes:
 * a malformed value or one under the 1 h minimum stops the start naming it; on PostgreSQL a server
 * restarted after a key's retention has passed forgets it (that reading sent again is stored), while
 * a newer key still answers the duplicate. A long prune (the retention lowered on a big database)
 * yields to a stop on both stores: SIGTERM during it ends the process after the current batch, and
 * the next start goes on with it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { http } from "../helpers/http.js";
import { PG_AVAILABLE, PG_BASE_URL, pgSchemaUrl } from "../helpers/pg.js";
import { type CliProcess, spawnCli, startServerProcess, stopProcess } from "../helpers/process.js";
import { waitFor } from "../helpers/wait.js";

const root = mkdtempSync(join(tmpdir(), "blockkit-keys-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Keys deleted per transaction by a prune: server/store/sqlite/devices.ts, server/store/postgres/events.ts. */
const BATCH = { sqlite: 10_000, postgres: 50_000 };

/**
 * A server started on `old` keys past the retention (and `kept` newer ones) is sent SIGTERM once its
 * prune is under way: it exits 0 after at most the batch in flight (and one begun before the signal
 * was handled), far from the end; the next start prunes the rest.
 */
async function stopDuringPrune(start: () => CliProcess, keys: () => Promise<number>, old: number, kept: number, batch: number): Promise<void> {
  const first = start();
  try {
    await waitFor("the prune under way", async () => {
      const n = await keys();
      return n < old + kept && n > kept;
    }, 30_000, 5);
    // Paused while it is signalled, so that the signal comes between two batches however fast they go.
    first.child.kill("SIGSTOP");
    const atSignal = await keys();
    first.child.kill("SIGTERM");
    first.child.kill("SIGCONT");
    expect(await first.exited).toBe(0);
    const left = await keys();
    expect(atSignal - left).toBeLessThanOrEqual(2 * batch);
    expect(left).toBeGreaterThan(kept);
    await first.waitForErrLine(/idempotency keys pruning stopped: the rest at the next start/);
  } finally {
    first.child.kill("SIGKILL");
  }
  const second = start();
  try {
    await waitFor("the rest pruned by the next start", async () => (await keys()) === kept, 60_000);
    await second.waitForLine(/^base_url/);
  } finally {
    await stopProcess(second).catch(() => undefined);
  }
}

describe("blockkit server --idempotency-retention", () => {
  it("refuses a malformed value or one under 1h, from the flag or the environment, naming it", { timeout: 40_000 }, async () => {
    const server = (dir: string, args: string[], env: NodeJS.ProcessEnv = {}) =>
      spawnCli(["server", "--port", "0", "--stream-port", "0", "--data", join(root, dir), ...args], env);
    const short = server("a", ["--idempotency-retention", "59m"]);
    const bad = server("b", ["--idempotency-retention", "soon"]);
    const env = server("c", [], { BLOCKKIT_IDEMPOTENCY_RETENTION: "0h" });
    try {
      const codes = await Promise.all([short.exited, bad.exited, env.exited]);
      expect(codes.every((c) => c !== 0)).toBe(true);
      expect(short.stderr.join("\n")).toMatch(/"59m" is under the 1h minimum/);
      expect(bad.stderr.join("\n")).toMatch(/"soon" is not a duration/);
      expect(env.stderr.join("\n")).toMatch(/BLOCKKIT_IDEMPOTENCY_RETENTION: "0h" is under the 1h minimum/);
    } finally {
      for (const p of [short, bad, env]) p.child.kill("SIGKILL"); // one that started after all does not outlive the test
    }
  });
});

describe.skipIf(!PG_AVAILABLE)("idempotency retention on PostgreSQL, real processes", () => {
  it("a restart after a key's retention forgets it; a newer key still answers duplicates", { timeout: 60_000 }, async () => {
    const db = pgSchemaUrl();
    const admin = "keys-admin-token-000000001";
    const client = new pg.Client({ connectionString: PG_BASE_URL });
    await client.connect();
    const start = () => startServerProcess({ dataDir: join(root, "pg"), adminToken: admin, extraArgs: ["--db", db.url, "--idempotency-retention", "2h"] });
    let srv = await start();
    try {
      const node = "KEYSRETENTION001";
      const act = await http<{ token: string }>(`${srv.baseUrl}/block/${node}/activate?user_access_token=${admin}`);
      expect(act.status).toBe(200);
      const send = (KEY: string) =>
        http(`${srv.baseUrl}/block/${node}/data`, { method: "POST", headers: { "x-service-token": act.body.token }, json: { G: "0", V: 0, D: 9, DA: "1", KEY } });
      const stored = async () => Number((await client.query(`SELECT count(*) AS n FROM ${db.schema}.readings`)).rows[0].n);
      for (const key of ["old", "new", "old", "new"]) expect((await send(key)).status).toBe(200);
      expect(await stored()).toBe(2);
      // "old" was first seen 3 hours ago, "new" 1 hour ago: only "old" is past the 2 h retention.
      await client.query(`UPDATE ${db.schema}.event_keys SET ts = ts - (CASE key WHEN 'old' THEN 3 ELSE 1 END) * 3600000`);
      expect(await stopProcess(srv)).toBe(0);
      srv = await start();
      await waitFor("the key past the retention pruned at start", async () => (await client.query(`SELECT key FROM ${db.schema}.event_keys`)).rows.length === 1);
      expect((await client.query(`SELECT key FROM ${db.schema}.event_keys`)).rows).toEqual([{ key: "new" }]);
      expect((await send("new")).status).toBe(200);
      expect(await stored()).toBe(2);
      expect((await send("old")).status).toBe(200);
      expect(await stored()).toBe(3);
    } finally {
      await stopProcess(srv).catch(() => undefined);
      await client.end();
      await db.drop();
    }
  });
});

describe("a long prune of idempotency keys yields to a stop", () => {
  const admin = "keys-admin-token-000000001";
  
  it("on SQLite", { timeout: 120_000 }, async () => {
    const dir = join(root, "prune");
    // The schema, made by a server that starts and stops.
    const made = await startServerProcess({ dataDir: dir, adminToken: admin });
    expect(await stopProcess(made)).toBe(0);
    const db = new Database(join(dir, "blockkit.db"));
    const old = 10 * BATCH.sqlite;
    try {
      // Keys first seen at the epoch (past any retention), and 3 from now.
      db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${old}) INSERT INTO event_keys (node_id, key, ts) SELECT 'PRUNE' || (i % 100), 'k' || i, 0 FROM n`);
      db.prepare("INSERT INTO event_keys (node_id, key, ts) VALUES ('PRUNE0', 'new1', ?), ('PRUNE0', 'new2', ?), ('PRUNE0', 'new3', ?)").run(Date.now(), Date.now(), Date.now());
      const count = db.prepare("SELECT count(*) FROM event_keys").pluck();
      const start = () => spawnCli(["server", "--port", "0", "--stream-port", "0", "--data", dir, "--admin-token", admin]);
      await stopDuringPrune(start, async () => count.get() as number, old, 3, BATCH.sqlite);
    } finally {
      db.close();
    }
  });

  it.skipIf(!PG_AVAILABLE)("on PostgreSQL", { timeout: 120_000 }, async () => {
    const db = pgSchemaUrl();
    const client = new pg.Client({ connectionString: PG_BASE_URL });
    await client.connect();
    try {
      const migrate = spawnCli(["migrate", "--db", db.url]);
      expect(await migrate.exited).toBe(0);
      const pgOld = 8 * BATCH.postgres;
      await client.query(`INSERT INTO ${db.schema}.event_keys (node_id, key, ts) SELECT 'PRUNE' || (i % 100), 'k' || i, 0 FROM generate_series(1, ${pgOld}) AS i`);
      await client.query(`INSERT INTO ${db.schema}.event_keys (node_id, key, ts) VALUES ('PRUNE0', 'new1', $1), ('PRUNE0', 'new2', $1), ('PRUNE0', 'new3', $1)`, [Date.now()]);
      const start = () => spawnCli(["server", "--port", "0", "--stream-port", "0", "--db", db.url, "--admin-token", admin]);
      const count = async () => Number((await client.query(`SELECT count(*) AS n FROM ${db.schema}.event_keys`)).rows[0].n);
      await stopDuringPrune(start, count, pgOld, 3, BATCH.postgres);
    } finally {
      await client.end();
      await db.drop();
    }
  });
});
