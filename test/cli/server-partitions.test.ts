/**
 * `--partition-interval` in real processes: a malformed value stops the start naming it; on
 * PostgreSQL a database made with months refuses a server started with days, with what to do, until
 * `blockkit migrate --partition-interval day` changes the database's interval.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PG_AVAILABLE, pgSchemaUrl } from "../helpers/pg.js";
import { spawnCli, startServerProcess, stopProcess } from "../helpers/process.js";

const root = mkdtempSync(join(tmpdir(), "blockkit-parts-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("blockkit server --partition-interval", () => {
  it("refuses an interval that is not day, week or month", { timeout: 30_000 }, async () => {
    const p = spawnCli(["server", "--port", "0", "--stream-port", "0", "--data", join(root, "a"), "--partition-interval", "hourly"]);
    try {
      expect(await p.exited).not.toBe(0);
      expect(p.stderr.join("\n")).toMatch(/"hourly" is not a partition interval: day, week or month/);
    } finally {
      p.child.kill("SIGKILL");
    }
  });
});

describe.skipIf(!PG_AVAILABLE)("partition interval of a PostgreSQL database, real processes", () => {
  it("made with months: a server with days is refused until blockkit migrate changes it", { timeout: 60_000 }, async () => {
    const db = pgSchemaUrl();
    try {
      const made = spawnCli(["migrate", "--db", db.url]);
      await made.waitForLine(/^readings partitioned by month$/);
      expect(await made.exited).toBe(0);
      const refused = spawnCli(["server", "--port", "0", "--stream-port", "0", "--data", join(root, "b"), "--db", db.url, "--partition-interval", "day"]);
      try {
        expect(await refused.exited).not.toBe(0);
      } finally {
        refused.child.kill("SIGKILL");
      }
      expect(refused.stderr.join("\n")).toMatch(/partitioned by month; this server was started with --partition-interval day\. .*blockkit migrate --db URL --partition-interval day/);
      const changed = spawnCli(["migrate", "--db", db.url, "--partition-interval", "day"]);
      await changed.waitForLine(/^readings partitioned by day$/);
      expect(await changed.exited).toBe(0);
      expect(changed.stdout).toEqual(["up to date", "readings partitioned by day"]);
      const srv = await startServerProcess({ dataDir: join(root, "c"), adminToken: "parts-admin-token-0000001", extraArgs: ["--db", db.url, "--partition-interval", "day"] });
      expect(await stopProcess(srv)).toBe(0);
    } finally {
      await db.drop();
    }
  });
});
