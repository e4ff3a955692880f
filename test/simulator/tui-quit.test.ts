/**
 * `blockkit sim` with its TUI on a real terminal (util-linux `script` gives it a pty): q, the TUI's
 * quit (as its Ctrl-C, a key in raw mode rather than a signal), ends the run with the summary and
 * exit 130, as a Ctrl-C of a headless run does (test/simulator/e2e.test.ts): a run cut short is not a pass.
 * In CI ($CI set, where ink draws only its last frame) a terminal gets the headless progress lines.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockkitServer } from "../../server/controller.js";

const TOKEN = "admin-token-0123456789";
const ROOT = join(import.meta.dirname, "..", "..");

describe("blockkit sim's TUI", () => {
  let server: BlockkitServer;
  let dir: string;
  let baseUrl: string;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-sim-tui-"));
    server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: join(dir, "data"), adminToken: TOKEN, logger: pino({ level: "silent" }) });
    baseUrl = (await server.start()).baseUrl;
  });

  afterAll(async () => {
    if (child?.pid && child.exitCode === null) process.kill(-child.pid, "SIGKILL");
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Runs `blockkit sim` on a terminal, with $CI as given (the suite itself may run in CI, where it
   * is set), and types `key` into it once its output matches `when`; resolves with the output and
   * the exit code.
   */
  async function onTerminal(ci: string | undefined, when: RegExp, key: string): Promise<{ out: string; code: number | null; typed: boolean }> {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "CI" && k !== "CONTINUOUS_INTEGRATION"));
    if (ci !== undefined) env.CI = ci;
    const sim = `exec ${process.execPath} --import tsx cli/index.ts sim --server ${baseUrl} --token ${TOKEN} --blocks 2 --devices 1 --duration 60 --seed 81 --progress 0.5 --cleanup`;
    // -e: script exits with the command's code; the terminal is 100 x 30 so that the TUI has room.
    const c = spawn("script", ["-qefc", `stty cols 100 rows 30; ${sim}`, "/dev/null"], { cwd: ROOT, env, stdio: ["pipe", "pipe", "pipe"], detached: true });
    child = c;
    let out = "";
    let typed = false;
    const code = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`blockkit sim did not end within 45 s:\n${out.slice(-2000)}`)), 45_000);
      const seen = (chunk: Buffer): void => {
        out += chunk.toString();
        if (!typed && when.test(out)) {
          typed = true;
          c.stdin?.write(key);
        }
      };
      c.stdout?.on("data", seen);
      c.stderr?.on("data", seen);
      c.on("exit", (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });
    return { out, code, typed };
  }

  it("q ends the run with the summary and exit 130", { timeout: 60_000 }, async () => {
    // The header once the run is measuring: [RUNNING] elapsed 0:0s.
    const { out, code, typed } = await onTerminal(undefined, /\[RUNNING\]\S* elapsed 0:0\d/, "q");
    expect(typed, out.slice(-2000)).toBe(true);
    // Before: 0, the thresholds (none broken) of a run cut short.
    expect(code, out.slice(-2000)).toBe(130);
    expect(out).toMatch(/interrupted \(SIGINT\) after [\d.]+ of 60 s measured: not a pass, exit 130/);
    expect(out).toContain("cleanup: 2 blocks unpaired");
  });

  it("in CI, a terminal gets the progress lines: ink would draw nothing until the end", { timeout: 60_000 }, async () => {
    // Ctrl-C typed on the terminal: its line discipline turns it into SIGINT for the run.
    const { out, code, typed } = await onTerminal("true", /\[0:0\d\/1:00\] blocks 2\/2 /, "\x03");
    // Before: nothing at all was written in 45 s (ink in CI mode keeps every frame for the end).
    expect(typed, out.slice(-2000)).toBe(true);
    expect(out).toContain("CI is set: progress lines instead of the TUI");
    expect(out).not.toContain("[RUNNING]");
    expect(code, out.slice(-2000)).toBe(130);
    expect(out).toMatch(/interrupted \(SIGINT\) after [\d.]+ of 60 s measured: not a pass, exit 130/);
    expect(out).toContain("cleanup: 2 blocks unpaired");
  });
});
