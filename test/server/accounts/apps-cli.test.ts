import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerApps } from "../../../cli/apps.js";
import { hashToken } from "../../../server/services/secrets.js";
import { openSqliteStore } from "../../../server/store/sqlite/index.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

function blockkit(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["--import", "tsx", "cli/index.ts", ...args], { cwd: ROOT, timeout: 20_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

describe("blockkit apps add", () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-apps-"));
    const store = openSqliteStore({ dataDir: dir });
    await store.users.create("dev", null, Date.now());
    await store.close();
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints the client id and secret as JSON and stores only the secret's hash", async () => {
    const ok = await blockkit(["apps", "add", "--user", "dev", "--name", "Garden", "--redirect-uri", "https://garden.example/cb", "--data", dir]);
    expect(ok.code, ok.stderr).toBe(0);
    const out = JSON.parse(ok.stdout) as { client_id: string; client_secret: string };
    expect(Object.keys(out)).toEqual(["client_id", "client_secret"]);
    const store = openSqliteStore({ dataDir: dir });
    try {
      const row = await store.oauthApps.get(out.client_id);
      expect(row).toMatchObject({ name: "Garden", redirect_uri: "https://garden.example/cb", secret_hash: hashToken(out.client_secret) });
      expect(await store.oauthApps.list(row?.user_id ?? -1)).toHaveLength(1);
    } finally {
      await store.close();
    }
  });

  it("refuses a directory without a blockkit database and creates nothing there", async () => {
    const empty = join(dir, "empty");
    mkdirSync(empty);
    const missing = join(dir, "typo");
    const args = ["apps", "add", "--user", "dev", "--name", "Garden", "--redirect-uri", "https://garden.example/cb"];
    const [inEmpty, inMissing] = await Promise.all([blockkit([...args, "--data", empty]), blockkit([...args, "--db", `sqlite:${missing}`])]);
    expect(inEmpty.code).toBe(1);
    expect(inEmpty.stderr).toContain(`no blockkit database at ${join(empty, "blockkit.db")} (check --data/--db: an application needs an existing user)`);
    expect(inEmpty.stdout).toBe("");
    expect(readdirSync(empty)).toEqual([]);
    expect(inMissing.code).toBe(1);
    expect(inMissing.stderr).toMatch(/no blockkit database at .*typo.*does not exist \(check --data\/--db: an application needs an existing user\)/);
    expect(existsSync(missing)).toBe(false);
  });

  it("refuses an unknown user, a bad redirect URI and missing options with a clear message", async () => {
    const run = (args: string[]) => {
      const program = new Command().exitOverride().configureOutput({ writeErr: () => {} });
      registerApps(program);
      program.commands.forEach((c) => c.exitOverride().configureOutput({ writeErr: () => {} }));
      program.commands[0]?.commands.forEach((c) => c.exitOverride().configureOutput({ writeErr: () => {} }));
      return program.parseAsync(["node", "blockkit", "apps", "add", ...args]);
    };
    const count = async () => {
      const store = openSqliteStore({ dataDir: dir });
      try {
        return (await store.oauthApps.list((await store.users.byName("dev"))?.id ?? -1)).length;
      } finally {
        await store.close();
      }
    };
    const before = await count();
    await expect(run(["--user", "ghost", "--name", "X", "--redirect-uri", "https://x.example/cb", "--data", dir])).rejects.toThrow('no user "ghost"');
    await expect(run(["--user", "dev", "--name", "X", "--redirect-uri", "ftp://x.example/cb", "--db", `sqlite:${dir}`])).rejects.toThrow(
      "redirect_uri: use an http or https URL",
    );
    await expect(run(["--user", "dev", "--name", "X", "--data", dir])).rejects.toThrow("--redirect-uri");
    expect(await count()).toBe(before);
  });
});
