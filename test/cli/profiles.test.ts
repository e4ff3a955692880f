import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { resolveTarget } from "../../cli/target.js";
import type { StatusJson } from "../../cli/api/status.js";
import { ADMIN_TOKEN } from "../helpers/live.js";
import { type Live, lines, startCli } from "./helpers.js";

describe("blockkit login / logout / profiles / status", () => {
  let live: Live;
  let root: string;
  let n = 0;
  /** A fresh HOME and XDG_CONFIG_HOME per case. */
  const fresh = (): { HOME: string; XDG_CONFIG_HOME: string } => {
    n += 1;
    return { HOME: join(root, `home${n}`), XDG_CONFIG_HOME: join(root, `xdg${n}`) };
  };
  const hostPort = (): string => new URL(live.authUrl).host;

  beforeAll(async () => {
    live = await startCli();
    const block = await live.block("CLIPROFILE01");
    await block.send(1002, "0");
    await block.send(9, "21");
    root = mkdtempSync(join(tmpdir(), "blockkit-cli-profiles-"));
  });
  afterAll(async () => {
    await live.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("logs in with a URL without scheme: checks the token, saves the profile 0600 in a 0700 directory", async () => {
    const env = fresh();
    const login = await live.run(["login", "--server", hostPort(), "--token", ADMIN_TOKEN], { bare: true, env });
    expect(login.code, login.stderr).toBe(0);
    const file = join(env.XDG_CONFIG_HOME, "blockkit", "config.yaml");
    expect(login.stdout).toBe(`logged in to http://${hostPort()} as admin (profile default, saved in ${file})\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(env.XDG_CONFIG_HOME, "blockkit")).mode & 0o777).toBe(0o700);
    expect(parse(readFileSync(file, "utf8"))).toEqual({
      current: "default",
      profiles: { default: { server: `http://${hostPort()}`, token: ADMIN_TOKEN, user: "admin" } },
    });
    // Afterwards API commands need no flags.
    const devices = await live.run(["devices", "-o", "json"], { bare: true, env });
    expect(devices.code, devices.stderr).toBe(0);
    expect(Object.keys(JSON.parse(devices.stdout) as object).sort()).toEqual(["CLIPROFILE01_0_0_1002", "CLIPROFILE01_0_0_9"]);
  });

  it("uses ~/.config/blockkit/config.yaml without XDG_CONFIG_HOME", async () => {
    const { HOME } = fresh();
    const login = await live.run(["login", "--server", live.authUrl, "--token", ADMIN_TOKEN, "--profile", "lab"], { bare: true, env: { HOME } });
    expect(login.code, login.stderr).toBe(0);
    expect(statSync(join(HOME, ".config", "blockkit", "config.yaml")).mode & 0o777).toBe(0o600);
  });

  it("writes nothing when the server refuses the token, and says so with exit 1", async () => {
    const env = fresh();
    const r = await live.run(["login", "--server", live.authUrl, "--token", "not-the-token-0123456789"], { bare: true, env });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`blockkit login: ${live.authUrl} refused the token (401): nothing saved\n`);
    expect(existsSync(join(env.XDG_CONFIG_HOME, "blockkit"))).toBe(false);
    expect(existsSync(env.HOME)).toBe(false);
  });

  it("picks profiles with --profile and BLOCKKIT_PROFILE; flags and the environment override; lists and forgets them", async () => {
    const env = fresh();
    expect((await live.run(["login", "--server", live.authUrl, "--token", ADMIN_TOKEN, "--profile", "home"], { bare: true, env })).code).toBe(0);
    // A second profile whose token the server refuses (written by hand, as an expired token would be).
    const file = join(env.XDG_CONFIG_HOME, "blockkit", "config.yaml");
    const doc = parse(readFileSync(file, "utf8")) as { profiles: Record<string, unknown> };
    doc.profiles.stale = { server: live.authUrl, token: "revoked-token-0123456789" };
    writeFileSync(file, JSON.stringify(doc), { mode: 0o600 });

    const list = await live.run(["profiles"], { bare: true, env });
    expect(lines(list.stdout)).toEqual([
      expect.stringMatching(/^CURRENT\s+PROFILE\s+SERVER\s+USER$/),
      expect.stringMatching(new RegExp(`^\\*\\s+home\\s+${live.authUrl}\\s+admin$`)),
      expect.stringMatching(new RegExp(`^\\s+stale\\s+${live.authUrl}\\s+-$`)),
    ]);
    expect((await live.run(["devices"], { bare: true, env })).code).toBe(0);
    expect((await live.run(["devices", "--profile", "stale"], { bare: true, env })).stderr).toMatch(/^blockkit: 401 /);
    expect((await live.run(["devices"], { bare: true, env: { ...env, BLOCKKIT_PROFILE: "stale" } })).code).toBe(1);
    // The environment's token overrides the profile's; the flag overrides both.
    expect((await live.run(["devices"], { bare: true, env: { ...env, BLOCKKIT_PROFILE: "stale", BLOCKKIT_TOKEN: ADMIN_TOKEN } })).code).toBe(0);
    expect((await live.run(["devices", "--token", "wrong-0123456789abcdef"], { bare: true, env })).code).toBe(1);
    const unknown = await live.run(["devices", "--profile", "nowhere"], { bare: true, env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^blockkit devices: no profile "nowhere" /);

    expect((await live.run(["profiles", "use", "stale"], { bare: true, env })).stdout).toBe("current profile: stale\n");
    const out = await live.run(["logout"], { bare: true, env });
    expect(out.stdout).toBe("logged out of profile stale; current profile: home\n");
    const json = JSON.parse((await live.run(["profiles", "-o", "json"], { bare: true, env })).stdout) as unknown;
    expect(json).toEqual([{ name: "home", current: true, server: live.authUrl, user: "admin" }]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(env.HOME, ".cache", "blockkit", "profiles"), "utf8")).toBe("home\n");
    // A file others can read still works, with a warning that names it.
    chmodSync(file, 0o644);
    const warned = await live.run(["devices", "-o", "json"], { bare: true, env });
    expect(warned.code).toBe(0);
    expect(warned.stderr).toBe(`blockkit: warning: ${file} holds tokens and is readable by others (chmod 600 it)\n`);
  });

  it("never sends a profile's token to another server given by flag or environment", () => {
    const env = fresh();
    const dir = join(env.XDG_CONFIG_HOME, "blockkit");
    const config = { current: "home", profiles: { home: { server: "http://127.0.0.1:8000", token: "home-token" } } };
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "config.yaml"), JSON.stringify(config), { mode: 0o600 });
    expect(resolveTarget({}, env)).toEqual({ server: "http://127.0.0.1:8000", token: "home-token", profile: "home" });
    expect(resolveTarget({ server: "127.0.0.1:8000/rest/v0" }, env).token).toBe("home-token");
    expect(() => resolveTarget({ server: "http://elsewhere:8000" }, env)).toThrow('profile "home" holds a token for http://127.0.0.1:8000');
    expect(() => resolveTarget({}, { ...env, BLOCKKIT_SERVER: "elsewhere:1" })).toThrow("holds a token for");
    expect(resolveTarget({ server: "elsewhere:1", token: "t" }, env)).toEqual({ server: "http://elsewhere:1", token: "t", profile: null });
    expect(() => resolveTarget({ server: "ftp://x" }, { HOME: env.HOME })).toThrow('--server: "ftp://x" is not an http or https URL');
  });

  it("status: reachable, version, whose token, counts, as a table, JSON and YAML; an unreachable server exits 1", async () => {
    const table = await live.run(["status"]);
    expect(table.code, table.stderr).toBe(0);
    expect(lines(table.stdout)).toEqual([
      `server    ${live.authUrl}`,
      "reachable yes, blockkit 0.1.0",
      "user      admin (personal token)",
      "blocks    1",
      "devices   2",
      "rules     0",
    ]);
    const json = JSON.parse((await live.run(["status", "-o", "json"])).stdout) as StatusJson;
    expect(json).toMatchObject({ reachable: true, version: "0.1.0", user: "admin", blocks: 1, devices: 2, rules: 0, error: null });
    const yaml = parse((await live.run(["status", "-o", "yaml"])).stdout) as StatusJson;
    expect(yaml).toEqual(json);

    const down = await live.run(["status", "-o", "json", "--server", "http://127.0.0.1:9", "--token", ADMIN_TOKEN], { bare: true });
    expect(down.code).toBe(1);
    expect(JSON.parse(down.stdout)).toMatchObject({ reachable: false, error: "unreachable", user: null });
    expect(down.stderr).toMatch(/^blockkit: cannot reach the server/);
  });
});
