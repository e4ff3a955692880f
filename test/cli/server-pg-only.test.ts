/**
 * `blockkit server --retention` and `--partition-interval` shape PostgreSQL's readings partitions:
 * on the embedded SQLite store they are refused at start, naming the options, instead of being
 * silently ignored (an operator who asked for readings to be dropped would otherwise keep them all).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { spawnCli } from "../helpers/process.js";

const root = mkdtempSync(join(tmpdir(), "blockkit-pgonly-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("blockkit server on the embedded store", () => {
  it("refuses --retention and --partition-interval, naming them", { timeout: 40_000 }, async () => {
    const server = (dir: string, args: string[]) => spawnCli(["server", "--port", "0", "--stream-port", "0", "--data", join(root, dir), ...args]);
    const retention = server("a", ["--retention", "30d"]);
    const both = server("b", ["--retention", "30d", "--partition-interval", "day"]);
    try {
      const codes = await Promise.all([retention.exited, both.exited]);
      expect(codes.every((c) => c !== 0)).toBe(true);
      expect(retention.stderr.join("\n")).toMatch(/--retention: for a PostgreSQL store only .*keeps every reading/);
      expect(both.stderr.join("\n")).toMatch(/--retention and --partition-interval: for a PostgreSQL store only/);
    } finally {
      for (const p of [retention, both]) p.child.kill("SIGKILL"); // one that started after all does not outlive the test
    }
  });
});
