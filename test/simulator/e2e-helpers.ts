/**
 * The set-up of the `blockkit sim` end-to-end tests (e2e.test.ts, e2e-signals.test.ts): a real
 * server on loopback, and `sim()`, which runs `blockkit sim` as a child process in its own process
 * group and kills what is left of it at the end. Apart because both files run on it. `baseUrl`,
 * `dir` and `api` are set in beforeAll (ES module live bindings: an importer reads them once set).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll } from "vitest";
import { ApiClient } from "../../protocol/api-client.js";
import { BlockkitServer } from "../../server/controller.js";

export const TOKEN = "admin-token-0123456789";
const ROOT = join(import.meta.dirname, "..", "..");

export interface Run {
  code: number | null;
  stderr: string;
}

const children = new Set<ChildProcess>();

export interface SimHow {
  timeoutMs?: number;
  /** Shell lines run before the command (e.g. `ulimit -n 300`). */
  shell?: string;
  env?: NodeJS.ProcessEnv;
  /** Called with each chunk of stderr and the child (in its own process group, as a terminal's job). */
  onStderr?: (text: string, child: ChildProcess) => void;
  /** Called once the command's process is spawned. */
  onSpawn?: (child: ChildProcess) => void;
}

export function sim(args: string[], timeoutOrHow: number | SimHow = 40_000): Promise<Run> {
  const how = typeof timeoutOrHow === "number" ? { timeoutMs: timeoutOrHow } : timeoutOrHow;
  const timeoutMs = how.timeoutMs ?? 40_000;
  return new Promise((resolve, reject) => {
    const argv = [process.execPath, "--import", "tsx", "cli/index.ts", "sim", ...args];
    const child = how.shell
      ? spawn("/bin/sh", ["-c", `${how.shell}; exec "$@"`, "sh", ...argv], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: how.env, detached: true })
      : spawn(argv[0] as string, argv.slice(1), { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: how.env ?? process.env, detached: true });
    children.add(child);
    how.onSpawn?.(child);
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
      how.onStderr?.(stderr, child);
    });
    child.stdout.resume();
    const timer = setTimeout(() => {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
      reject(new Error(`blockkit sim did not finish within ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, stderr });
    });
  });
}

let server: BlockkitServer;
export let dir: string;
export let baseUrl: string;
export let api: ApiClient;

/** Starts the server before the calling file's tests; kills the sims left and stops it after. */
export function useServer(): void {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-sim-e2e-"));
    server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: join(dir, "data"), adminToken: TOKEN, logger: pino({ level: "silent" }), pollHoldSeconds: 5 });
    const started = await server.start();
    baseUrl = started.baseUrl;
    api = new ApiClient({ baseUrl, token: TOKEN });
  });

  afterAll(async () => {
    for (const c of children) if (c.pid) process.kill(-c.pid, "SIGKILL");
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });
}
