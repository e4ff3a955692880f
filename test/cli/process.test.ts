import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DeviceJson } from "../../protocol/api-types.js";
import { ROOT } from "../helpers/process.js";
import { type Live, TOKEN, startLive } from "./helpers.js";

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
    live = await startLive();
    relay = await (await live.block("CLIPROCESS01")).send(1002, "1");
  });
  afterAll(async () => {
    await live.close();
  });

  it("lists devices over real HTTP and exits 0 by itself", { timeout: 25_000 }, async () => {
    const r = await blockkit(["devices", "--json", "--server", live.urls.baseUrl, "--token", TOKEN]);
    expect(r.code, r.stderr).toBe(0);
    const devices = JSON.parse(r.stdout) as Record<string, DeviceJson>;
    expect(devices[relay]?.last_data).toMatchObject({ DA: 1 });
  });

  it("reads a rule from standard input with the environment's server and token; a usage error exits 2", { timeout: 25_000 }, async () => {
    const rule = { shortName: "From a pipe", preconditions: [{ handler: "serviceChange", params: { guid: relay, to: "0" } }], actions: [{ handler: "serviceSendCommand", params: { guid: relay, da: "1" } }] };
    const env = { BLOCKKIT_SERVER: live.urls.authUrl, BLOCKKIT_TOKEN: TOKEN };
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
