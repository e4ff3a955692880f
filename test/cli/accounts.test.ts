/**
 * Accounts and the data directory, with real processes and files: the first user is made only once
 * the server listens (a start that fails on a port in use creates nothing), `users passwd` and
 * `users token` work on the store directly, account commands refuse a directory without a
 * database unless `--create`, passwords need 8 characters, the data dir is 0700 and the database
 * files 0600 (looser ones tightened with a warning), and start-up errors name the file.
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { type Server, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { BlockkitServer } from "../../server/controller.js";
import { verifyPassword } from "../../server/services/secrets.js";
import { ROOT, startServerProcess, stopProcess } from "../helpers/process.js";
import { SmallFs } from "../helpers/small-fs.js";

const root = mkdtempSync(join(tmpdir(), "blockkit-accounts-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = (): string => join(root, `d${n++}`);

const { BLOCKKIT_DB: _db, ...withoutDb } = process.env;

function blockkit(args: string[], stdin = ""): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "cli/index.ts", ...args], { cwd: ROOT, env: withoutDb, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(stdin);
  });
}

const mode = (p: string): string => (statSync(p).mode & 0o777).toString(8);
const users = (dir: string): { name: string; password_hash: string | null }[] => {
  const db = new Database(join(dir, "blockkit.db"), { readonly: true });
  try {
    return db.prepare("SELECT name, password_hash FROM users").all() as { name: string; password_hash: string | null }[];
  } finally {
    db.close();
  }
};

describe("account commands", () => {
  it("refuse a directory without a database unless --create, and passwords under 8 characters", { timeout: 40_000 }, async () => {
    const typo = fresh();
    const [refused, short] = await Promise.all([blockkit(["users", "add", "bob", "--data", typo]), blockkit(["users", "add", "bob", "--password", "x", "--data", fresh(), "--create"])]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/no blockkit database at .*blockkit\.db.*--create/);
    expect(existsSync(typo)).toBe(false);
    expect(refused.stdout).toBe("");
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(/password must be at least 8 characters/);

    const made = await blockkit(["users", "add", "bob", "--password", "12345678", "--data", typo, "--create"]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/^[A-Za-z0-9_-]{20,}\n$/);
    expect(mode(typo)).toBe("700");
    expect(mode(join(typo, "blockkit.db"))).toBe("600");
  });

  it("set a password and issue a new token on the store directly", { timeout: 40_000 }, async () => {
    const dir = fresh();
    const added = await blockkit(["users", "add", "carol", "--data", dir, "--create"]);
    expect(added.code, added.stderr).toBe(0);
    const old = added.stdout.trim();
    const [passwd, token, nobody] = await Promise.all([
      blockkit(["users", "passwd", "carol", "--data", dir], "a new password\n"),
      blockkit(["users", "token", "carol", "--data", dir]),
      blockkit(["users", "token", "nobody", "--data", dir]),
    ]);
    expect(passwd.code, passwd.stderr).toBe(0);
    expect(await verifyPassword("a new password", users(dir)[0]?.password_hash ?? null)).toBe(true);
    expect(token.code, token.stderr).toBe(0);
    expect(token.stdout).toMatch(/^[A-Za-z0-9_-]{20,}\n$/);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toMatch(/no user "nobody"/);
    const server = new BlockkitServer({ dataDir: dir, logger: pino({ level: "silent" }) });
    await server.init();
    try {
      const get = async (t: string) => (await server.api.inject({ method: "GET", url: `/rest/v0/devices?user_access_token=${t}` })).statusCode;
      expect(await get(token.stdout.trim())).toBe(200);
      expect(await get(old)).toBe(401);
    } finally {
      await server.stop();
    }
  });
});

describe("a token revoked by another process", () => {
  it("leaves the running server's token cache within about a second", { timeout: 40_000 }, async () => {
    const dir = fresh();
    const server = new BlockkitServer({ dataDir: dir, logger: pino({ level: "silent" }), adminToken: "admin-token-revoke-0123" });
    await server.init();
    try {
      const get = async (t: string) => (await server.api.inject({ method: "GET", url: `/rest/v0/devices?user_access_token=${t}` })).statusCode;
      // Cached by this first use.
      expect(await get("admin-token-revoke-0123")).toBe(200);
      const issued = await blockkit(["users", "token", "admin", "--data", dir]);
      expect(issued.code, issued.stderr).toBe(0);
      const started = Date.now();
      await expect.poll(() => get("admin-token-revoke-0123"), { timeout: 5000, interval: 50 }).toBe(401);
      expect(Date.now() - started).toBeLessThan(2500);
      expect(await get(issued.stdout.trim())).toBe(200);
    } finally {
      await server.stop();
    }
  });
});

describe("the first start", () => {
  it("creates the first user only once it listens: a port in use leaves no account behind", { timeout: 40_000 }, async () => {
    const dir = fresh();
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, "127.0.0.1", r));
    const port = (busy.address() as { port: number }).port;
    const failed = await blockkit(["server", "--port", String(port), "--stream-port", "0", "--data", dir]);
    await new Promise<void>((r) => busy.close(() => r()));
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/EADDRINUSE/);
    expect(users(dir)).toEqual([]);
    const p = await startServerProcess({ dataDir: dir, adminToken: "admin-token-first-0123" });
    try {
      const line = await p.waitForLine(/^first user admin: user_access_token (\S+) password (\S+)$/);
      expect(line[1]).toBe("admin-token-first-0123");
    } finally {
      expect(await stopProcess(p)).toBe(0);
    }
  });
});

describe("the data directory", () => {
  it("is 0700 with 0600 database files, and looser modes are tightened with a warning", async () => {
    const dir = fresh();
    const lines: string[] = [];
    const logger = pino({ level: "warn" }, { write: (l: string) => lines.push(l) });
    const s1 = new BlockkitServer({ dataDir: dir, logger, adminToken: "admin-token-modes-0123" });
    await s1.init();
    expect(mode(dir)).toBe("700");
    for (const f of ["blockkit.db", "blockkit.db-wal", "blockkit.db-shm"]) expect(mode(join(dir, f)), f).toBe("600");
    await s1.stop();
    chmodSync(dir, 0o755);
    chmodSync(join(dir, "blockkit.db"), 0o644);
    const s2 = new BlockkitServer({ dataDir: dir, logger });
    await s2.init();
    await s2.stop();
    expect(mode(dir)).toBe("700");
    expect(mode(join(dir, "blockkit.db"))).toBe("600");
    expect(lines.join("")).toMatch(/was mode 755: tightened to 700/);
    expect(lines.join("")).toMatch(/blockkit\.db was mode 644: tightened to 600/);
  });

  it("refuses a 0-byte database and a corrupt one, naming the file and what to do", async () => {
    const empty = fresh();
    mkdirSync(empty, { mode: 0o700 });
    writeFileSync(join(empty, "blockkit.db"), "");
    const corrupt = fresh();
    mkdirSync(corrupt, { mode: 0o700 });
    writeFileSync(join(corrupt, "blockkit.db"), Buffer.alloc(8192, 0x42), { mode: 0o600 });
    const start = (dataDir: string) => new BlockkitServer({ dataDir, logger: pino({ level: "silent" }) }).init();
    await expect(start(empty)).rejects.toThrow(/blockkit\.db is empty \(0 bytes\).*Restore it from a backup, or delete it/);
    expect(statSync(join(empty, "blockkit.db")).size).toBe(0);
    await expect(start(corrupt)).rejects.toThrow(/blockkit\.db is not a usable SQLite database \(SQLITE_NOTADB.*Restore it from a backup/);
  });

  it("names the file and the fix when the directory cannot be written (a read-only filesystem)", async () => {
    const fs = SmallFs.mount(2 ** 20);
    try {
      execFileSync("mount", ["-o", "remount,ro", fs.dir]);
      const server = new BlockkitServer({ dataDir: fs.dir, logger: pino({ level: "silent" }) });
      await expect(server.init()).rejects.toThrow(/cannot create the database file .*blockkit\.db: EROFS.*make .* writable by this user/);
    } finally {
      fs.unmount();
    }
  });
});
