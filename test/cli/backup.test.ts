/**
 * `blockkit backup` with real processes and real SQLite files (cli/backup.ts,
 * server/store/sqlite/backup.ts): a backup taken while a server process stores readings in the same
 * data directory is consistent and holds every reading acknowledged before it started, and a server
 * started on it (restored as docs/operations.md says) serves them; the refusals name what is wrong;
 * a full disk under --out leaves no file behind and says so.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { once } from "node:events";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { BlockClient, BlockClientError } from "../../protocol/block-client.js";
import { openSqliteStore } from "../../server/store/sqlite/index.js";
import { http } from "../helpers/http.js";
import { SmallFs } from "../helpers/small-fs.js";
import { waitFor } from "../helpers/wait.js";
import { type CliProcess, spawnCli, startServerProcess, stopProcess } from "../helpers/process.js";

const ADMIN = "backup-admin-token-00001";
const NODE = "BACKUPBLOCK00001";
const GUID = `${NODE}_0_0_2000`;
const root = mkdtempSync(join(tmpdir(), "blockkit-backup-"));
const procs: CliProcess[] = [];
afterEach(async () => {
  for (const p of procs.splice(0)) await stopProcess(p, "SIGKILL");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Runs `blockkit ...args` to its end (BLOCKKIT_DB unset: the flags name the store). */
async function blockkit(args: string[]): Promise<{ code: number | string; out: string; err: string }> {
  const p = spawnCli(args, { BLOCKKIT_DB: undefined });
  procs.push(p);
  // After the exit, once stdout and stderr were read to their end.
  await once(p.child, "close");
  return { code: await p.exited, out: p.stdout.join("\n"), err: p.stderr.join("\n") };
}

/** The DAs of the device's readings in a database file, moved or still staged. */
function readingsIn(file: string): Set<string> {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db
      .prepare("SELECT da FROM readings UNION ALL SELECT da FROM readings_staged")
      .pluck()
      .all() as string[];
    return new Set(rows);
  } finally {
    db.close();
  }
}

/** A store with one user and `rows` readings of about 1 KB each, made in this process. */
function seededDataDir(dir: string, rows: number): void {
  const store = openSqliteStore({ dataDir: dir, ingestThread: false });
  const insert = store.db.prepare("INSERT INTO readings (device_id, ts, num, da) VALUES (1, ?, NULL, ?)");
  store.db.transaction(() => {
    for (let i = 0; i < rows; i++) insert.run(i, `r${i}`.padEnd(1000, "x"));
  })();
  store.db.close();
}

describe("blockkit backup", () => {
  it("copies a data directory a server is writing to: consistent, every acknowledged reading in it, and a server restored on it serves them", { timeout: 120_000 }, async () => {
    const dir = join(root, "live");
    const server = await startServerProcess({ dataDir: dir, adminToken: ADMIN });
    procs.push(server);
    const block = new BlockClient({ baseUrl: server.baseUrl, nodeId: NODE });
    const token = (await block.activate({ userToken: ADMIN })) as string;
    const acked = new Set<string>();
    const failures: string[] = [];
    let running = true;
    let seq = 0;
    const loop = async (): Promise<void> => {
      while (running) {
        const da = `w${seq++}`;
        try {
          await block.data(token, { G: "0", V: 0, D: 2000, DA: da });
          acked.add(da);
        } catch (err) {
          // Four writers on one block's credential reach its rate limit on a fast machine: as a
          // block does, wait the Retry-After the server asked for (not acknowledged: not counted).
          if (err instanceof BlockClientError && err.throttled) await new Promise((done) => setTimeout(done, err.retryAfterMs ?? 1000));
          else {
            failures.push(String(err));
            return;
          }
        }
      }
    };
    // Settled only in `finally`: no rejection can go unhandled meanwhile (a failure is in `failures`).
    const writers = Promise.all([loop(), loop(), loop(), loop()]);
    try {
      await waitFor("300 acknowledged readings", () => acked.size >= 300, 30_000);
      const before = new Set(acked);
      const out = join(root, "live.db");
      const backup = await blockkit(["backup", "--data", dir, "--out", out]);
      const during = acked.size - before.size;
      expect(backup.err).toBe("");
      expect(backup.code).toBe(0);
      expect(backup.out).toMatch(new RegExp(`^wrote ${out}: ${statSync(out).size} bytes, schema \\d{3}-[a-z-]+ \\(\\d+ migrations\\), integrity ok$`));
      // The server kept storing readings while the backup process ran.
      expect(during).toBeGreaterThan(0);
      expect(statSync(out).mode & 0o777).toBe(0o600);
      const db = new Database(out, { readonly: true });
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      db.close();
      const copied = readingsIn(out);
      expect([...before].filter((da) => !copied.has(da))).toEqual([]);
      expect(readdirSync(root).filter((f) => f.includes("partial"))).toEqual([]);

      const check = await blockkit(["backup", "--check", out]);
      expect(check.code).toBe(0);
      expect(check.out).toMatch(/^checked .*live\.db: \d+ bytes, schema .*, integrity ok$/);

      // Restore (docs/operations.md): the copy becomes blockkit.db of a data directory.
      const restored = join(root, "restored");
      mkdirSync(restored, { mode: 0o700 });
      copyFileSync(out, join(restored, "blockkit.db"));
      const second = await startServerProcess({ dataDir: restored, adminToken: ADMIN });
      procs.push(second);
      const res = await http<{ data: { v: string }[] }>(`${second.baseUrl}/device/${GUID}/data?from=0&user_access_token=${ADMIN}`);
      expect(res.status).toBe(200);
      const served = new Set(res.body.data.map((p) => String(p.v)));
      expect([...before].filter((da) => !served.has(da))).toEqual([]);
      // The server answered every write while the backup ran (a 429 is an answer, waited out).
      expect(failures).toEqual([]);
    } finally {
      running = false;
      await writers.catch(() => undefined);
      await block.close();
    }
  });

  it("refuses an existing --out, a missing --out directory, a --data without a database, a file that is not one, and a PostgreSQL store", { timeout: 60_000 }, async () => {
    const dir = join(root, "small");
    seededDataDir(dir, 10);
    const existing = join(root, "existing.db");
    writeFileSync(existing, "an older backup");
    const junk = join(root, "junk");
    mkdirSync(junk);
    writeFileSync(join(junk, "blockkit.db"), "not a database ".repeat(100));
    const [overwrite, noDir, typo, notDb, pg, badCheck] = await Promise.all([
      blockkit(["backup", "--data", dir, "--out", existing]),
      blockkit(["backup", "--data", dir, "--out", join(root, "missing", "b.db")]),
      blockkit(["backup", "--data", join(root, "typo"), "--out", join(root, "typo.db")]),
      blockkit(["backup", "--data", junk, "--out", join(root, "junk.db")]),
      blockkit(["backup", "--db", "postgres://blockkit@127.0.0.1/blockkit", "--out", join(root, "pg.db")]),
      blockkit(["backup", "--check", join(junk, "blockkit.db")]),
    ]);
    expect(overwrite.code).toBe(2);
    expect(overwrite.err).toContain(`--out: ${existing} exists: give --force to replace it`);
    expect(readFileSync(existing, "utf8")).toBe("an older backup");
    expect(noDir.code).toBe(2);
    expect(noDir.err).toContain(`--out: the directory ${join(root, "missing")} does not exist`);
    expect(typo.code).toBe(1);
    expect(typo.err).toContain(`no blockkit database at ${join(root, "typo", "blockkit.db")}: the directory ${join(root, "typo")} does not exist`);
    expect(existsSync(join(root, "typo"))).toBe(false);
    expect(notDb.code).toBe(1);
    expect(notDb.err).toContain(`${join(junk, "blockkit.db")} is not a usable SQLite database (SQLITE_NOTADB`);
    expect(existsSync(join(root, "junk.db"))).toBe(false);
    expect(pg.code).toBe(2);
    expect(pg.err).toMatch(/pg_dump/);
    expect(existsSync(join(root, "pg.db"))).toBe(false);
    expect(badCheck.code).toBe(1);
    expect(badCheck.err).toContain("is not a usable SQLite database");

    const forced = await blockkit(["backup", "--data", dir, "--out", existing, "--force"]);
    expect(forced.code).toBe(0);
    expect(readingsIn(existing).size).toBe(10);
    expect(statSync(existing).mode & 0o777).toBe(0o600);
  });

  it("removes the partial copy when the disk under --out fills, and says so; refuses a read-only one", { timeout: 60_000 }, async () => {
    const dir = join(root, "big");
    seededDataDir(dir, 3000); // about 3 MB
    const fs = SmallFs.mount(1024 * 1024);
    try {
      const out = join(fs.dir, "big.db");
      const r = await blockkit(["backup", "--data", dir, "--out", out]);
      expect(r.code).toBe(1);
      expect(r.err).toContain(`the disk of ${fs.dir} is full: the partial copy ${join(fs.dir, ".big.db.partial")} was removed`);
      expect(readdirSync(fs.dir)).toEqual([]);
      // A directory that cannot be written is refused before anything is copied.
      execFileSync("mount", ["-o", "remount,ro", fs.dir]);
      const ro = await blockkit(["backup", "--data", dir, "--out", out]);
      expect(ro.code).toBe(2);
      expect(ro.err).toContain(`--out: cannot write in ${fs.dir} (EROFS)`);
    } finally {
      fs.unmount();
    }
  });
});
