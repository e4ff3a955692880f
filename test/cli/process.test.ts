import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childArgs, wantsRespawn } from "../../cli/respawn.js";
import type { DeviceJson } from "../../protocol/api-types.js";
import { ROOT } from "../helpers/process.js";
import { ADMIN_TOKEN } from "../helpers/live.js";
import { type Live, startCli } from "./helpers.js";

/** Runs the real `blockkit` entry point in a child process; resolves with its exit code and output. */
function blockkit(args: string[], opts: { stdin?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "cli/index.ts", ...args], {
      cwd: ROOT,
      env: { ...process.env, BLOCKKIT_SERVER: "", BLOCKKIT_TOKEN: "", ...opts.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.stdin ?? "");
  });
}

describe("the blockkit process", () => {
  let live: Live;
  let relay: string;
  beforeAll(async () => {
    live = await startCli();
    relay = await (await live.block("CLIPROCESS01")).send(1002, "1");
  });
  afterAll(async () => {
    await live.close();
  });

  it("lists devices over real HTTP and exits 0 by itself", { timeout: 25_000 }, async () => {
    const r = await blockkit(["devices", "--json", "--server", live.baseUrl, "--token", ADMIN_TOKEN]);
    expect(r.code, r.stderr).toBe(0);
    const devices = JSON.parse(r.stdout) as Record<string, DeviceJson>;
    expect(devices[relay]?.last_data).toMatchObject({ DA: 1 });
  });

  it("reads a rule from standard input with the environment's server and token; a usage error exits 2", { timeout: 25_000 }, async () => {
    const rule = { shortName: "From a pipe", preconditions: [{ handler: "serviceChange", params: { guid: relay, to: "0" } }], actions: [{ handler: "serviceSendCommand", params: { guid: relay, da: "1" } }] };
    const env = { BLOCKKIT_SERVER: live.authUrl, BLOCKKIT_TOKEN: ADMIN_TOKEN };
    const [added, usage] = await Promise.all([
      blockkit(["rules", "add", "-"], { stdin: JSON.stringify(rule), env }),
      blockkit(["device", "data", relay, "--interval", "fortnight"], { env }),
    ]);
    expect(added.code, added.stderr).toBe(0);
    const rid = added.stdout.trim();
    expect((await live.run(["rules", "show", rid, "--json"])).stdout).toContain('"shortName":"From a pipe"');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('"fortnight" is not an interval');
  });
});

describe("blockkit sim's own process", () => {
  it("is started again with a larger young generation, unless one is given", () => {
    const argv = (...a: string[]) => ["node", "blockkit", ...a];
    expect(wantsRespawn(argv("sim", "--blocks", "5"), {}, [])).toBe(true);
    expect(wantsRespawn(argv("sim", "replay", "f.jsonl"), {}, [])).toBe(false);
    // No fleet, no restart: Ctrl-C and SIGINT from a script reach the one process.
    for (const sub of ["nodes", "merge", "cleanup"]) expect(wantsRespawn(argv("sim", sub), {}, [])).toBe(false);
    expect(wantsRespawn(argv("server"), {}, [])).toBe(false);
    expect(wantsRespawn(argv("sim"), { BLOCKKIT_SIM_CHILD: "1" }, [])).toBe(false);
    expect(wantsRespawn(argv("sim"), {}, ["--max-semi-space-size=64"])).toBe(false);
    expect(wantsRespawn(argv("sim"), { NODE_OPTIONS: "--max-semi-space-size=16" }, [])).toBe(false);
  });

  it("runs the child with 32 MB semi-spaces and without V8's memory reducer, after this process's own flags", () => {
    expect(childArgs(["node", "/x/blockkit", "sim", "--blocks", "5"], ["--import", "tsx"])).toEqual([
      "--import",
      "tsx",
      "--max-semi-space-size=32",
      "--no-memory-reducer",
      "/x/blockkit",
      "sim",
      "--blocks",
      "5",
    ]);
  });

  it("passes the child's exit code on, and a usage error still exits 2", { timeout: 25_000 }, async () => {
    const bad = await blockkit(["sim", "--blocks", "zero", "--headless"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--blocks");
  });

  it("forwards SIGTERM to the simulator, which stops cleanly", { timeout: 30_000 }, async () => {
    const live = await startCli();
    try {
      const child = spawn(process.execPath, ["--import", "tsx", "cli/index.ts", "sim", "--headless", "--blocks", "3", "--duration", "60", "--progress", "0.5", "--server", live.baseUrl, "--token", ADMIN_TOKEN], {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      const running = new Promise<void>((resolve) => {
        child.stderr.on("data", (c: Buffer) => {
          stderr += c.toString();
          if (/\] blocks 3\/3 sent/.test(stderr)) resolve();
        });
      });
      await running;
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      child.kill("SIGTERM");
      const code = await exited;
      // The child stopped as on a SIGTERM of its own: it measured and printed its summary; cut
      // short, the run is not a pass (143: 128 + SIGTERM), and the parent passes that on.
      expect(code, stderr).toBe(143);
      expect(stderr).toMatch(/blocks 3\/3 activated, events \d+\/\d+ acked/);
      expect(stderr).toContain("interrupted (SIGTERM)");
    } finally {
      await live.close();
    }
  });
});
