/**
 * `blockkit server --idempotency-retention` (and BLOCKKIT_IDEMPOTENCY_RETENTION) in real processes:
 * a malformed value or one under the 1 h minimum stops the start naming it; on PostgreSQL a server
 * restarted after a key's retention has passed forgets it (that reading sent again is stored), while
 * a newer key still answers the duplicate.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { http } from "../helpers/http.js";
import { PG_AVAILABLE, PG_BASE_URL, pgSchemaUrl } from "../helpers/pg.js";
import { spawnCli, startServerProcess, stopProcess } from "../helpers/process.js";
import { waitFor } from "../helpers/wait.js";

const root = mkdtempSync(join(tmpdir(), "blockkit-keys-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

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
