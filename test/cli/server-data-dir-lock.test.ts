/**
 * One server per data directory (server/store/sqlite/dir-lock.ts), with real processes: a second
 * `blockkit server --data DIR` exits non-zero at once, naming the directory and the pid of the
 * server that holds it, while the first keeps serving; once the first is killed with SIGKILL (no
 * clean-up, its pid file left behind) a new server starts on the same directory. In one process,
 * a second store with an ingest thread on the directory is refused the same way, while a one-shot
 * store (no ingest thread: `blockkit users`, `apps`) still opens beside it.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../server/store/sqlite/index.js";
import { PID_FILE } from "../../server/store/sqlite/dir-lock.js";
import { http } from "../helpers/http.js";
import { type CliProcess, spawnCli, startServerProcess, stopProcess } from "../helpers/process.js";

const ADMIN = "dir-lock-admin-token-0001";
const root = mkdtempSync(join(tmpdir(), "blockkit-dirlock-"));
const procs: CliProcess[] = [];
afterEach(async () => {
  for (const p of procs.splice(0)) await stopProcess(p, "SIGKILL");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("blockkit server on a data directory another server holds", () => {
  it("refuses the second start naming the directory and the holder's pid; starts again after a SIGKILL of the holder", { timeout: 60_000 }, async () => {
    const dir = join(root, "a");
    const first = await startServerProcess({ dataDir: dir, adminToken: ADMIN });
    procs.push(first);
    const pid = first.child.pid as number;
    expect(readFileSync(join(dir, PID_FILE), "utf8").trim()).toBe(String(pid));

    const second = spawnCli(["server", "--port", "0", "--stream-port", "0", "--data", dir, "--admin-token", ADMIN]);
    procs.push(second);
    const code = await second.exited;
    expect(code).not.toBe(0);
    expect(second.stdout.join("\n")).not.toMatch(/blockkit server ready/);
    const said = second.stderr.join("\n");
    expect(said).toContain(`the data directory ${dir} is in use by another blockkit server (pid ${pid})`);
    // The first was not disturbed.
    expect((await http(new URL("/healthz", first.baseUrl).href)).status).toBe(200);

    first.child.kill("SIGKILL");
    expect(await first.exited).toBe("SIGKILL");
    // Left behind by the kill: it must not block the next start.
    expect(existsSync(join(dir, PID_FILE))).toBe(true);
    const third = await startServerProcess({ dataDir: dir, adminToken: ADMIN });
    procs.push(third);
    expect(readFileSync(join(dir, PID_FILE), "utf8").trim()).toBe(String(third.child.pid));
    expect((await http(new URL("/healthz", third.baseUrl).href)).status).toBe(200);
    // A clean stop removes the pid file.
    expect(await stopProcess(third, "SIGTERM")).toBe(0);
    expect(existsSync(join(dir, PID_FILE))).toBe(false);
  });
});

describe("two stores on one data directory in one process", () => {
  it("refuses a second store with an ingest thread, opens a one-shot store beside it, and frees the directory at close", async () => {
    const dir = join(root, "b");
    const owner = openSqliteStore({ dataDir: dir });
    try {
      expect(() => openSqliteStore({ dataDir: dir })).toThrow(`the data directory ${dir} is in use by another blockkit server (pid ${process.pid})`);
      const oneShot = openSqliteStore({ dataDir: dir, ingestThread: false });
      expect(await oneShot.users.count()).toBe(0);
      await oneShot.close();
    } finally {
      await owner.close();
    }
    const again = openSqliteStore({ dataDir: dir });
    expect(again.ingestThread).not.toBeNull();
    await again.close();
  });
});
