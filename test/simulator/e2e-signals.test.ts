/**
 * End to end: how `blockkit sim` ends on a signal (Ctrl-C with --cleanup, during the drain, SIGTERM
 * repeated to the group, SIGINT or SIGTERM during start-up): the exit code, the summary, the report
 * and the fleet unpaired. A real server on loopback, the sim a child process in its own group.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Report } from "../../simulator/report.js";
import { waitFor } from "../helpers/wait.js";
import { TOKEN, api, baseUrl, dir, sim, useServer } from "./e2e-helpers.js";

/** The pid of the process's child that runs the command line again (not tsx's esbuild), if any yet. */
function respawned(pid: number): number | undefined {
  const file = `/proc/${pid}/task/${pid}/children`;
  if (!existsSync(file)) return undefined;
  const pids = readFileSync(file, "utf8").split(" ").filter(Boolean).map(Number);
  return pids.find((c) => {
    try {
      return readFileSync(`/proc/${c}/cmdline`, "utf8").includes("cli/index.ts");
    } catch {
      return false; // gone meanwhile
    }
  });
}

/**
 * The summary's `blocks N/M activated` and the cleanup's `N blocks unpaired` agree (issue 18: "0/3
 * activated", then 1 unpaired); a run that failed before its summary (a worker the Ctrl-C reached
 * first) prints neither.
 */
function unpairedAsActivated(stderr: string): boolean {
  const activated = /^blocks (\d+)\/\d+ activated/m.exec(stderr)?.[1];
  const unpaired = /^cleanup: (\d+) blocks unpaired/m.exec(stderr)?.[1];
  return activated === unpaired;
}

describe("blockkit sim against a real server", () => {
  useServer();

  it("Ctrl-C with --cleanup ends the run, prints the summary, writes the report, unpairs the fleet, and exits 130", { timeout: 60_000 }, async () => {
    let sent = false;
    const reportFile = join(dir, "interrupted.json");
    const run = await sim(["--headless", "--blocks", "5", "--devices", "2", "--duration", "60", "--seed", "77", "--cleanup", "--progress", "0.5", "--drain", "3", "--report", reportFile], {
      env: { ...process.env, BLOCKKIT_SERVER: baseUrl, BLOCKKIT_TOKEN: TOKEN },
      onStderr: (text, child) => {
        // The terminal's Ctrl-C reaches the whole process group (the respawning parent and its child).
        if (!sent && /\[0:0\d\/1:00\] blocks 5\/5/.test(text) && child.pid) {
          sent = true;
          process.kill(-child.pid, "SIGINT");
        }
      },
    });
    expect(sent).toBe(true);
    // Interrupted is not a pass, though its thresholds (none broken) would say so. Before: exit 0.
    expect(run.code, run.stderr).toBe(130);
    expect(run.stderr).toMatch(/blocks 5\/5 activated, events \d+\/\d+ acked/);
    expect(run.stderr).toMatch(/interrupted \(SIGINT\) after [\d.]+ of 60 s measured: not a pass, exit 130/);
    // The report says so as well (before, its `passed` was the thresholds' alone: true), so that a
    // merge of it (`sim merge`) is not a pass either; its thresholds are still checked on what was measured.
    const written = JSON.parse(readFileSync(reportFile, "utf8")) as Report;
    expect(written.passed).toBe(false);
    expect(written.interrupted).toEqual({ signal: "SIGINT", during_start_up: false });
    expect(written.thresholds.every((t) => t.passed)).toBe(true);
    expect(run.stderr).toContain("cleanup: 5 blocks unpaired, 0 callbacks removed");
    expect(Object.keys(await api.blocks()).filter((n) => n.startsWith("SIM77N"))).toEqual([]);
  });

  it("a Ctrl-C during the drain cuts nothing short: the thresholds decide the exit code", { timeout: 60_000 }, async () => {
    let sent = false;
    // Callback devices make the drain wait 1.5 s for their deliveries: progress lines say [draining] meanwhile.
    const run = await sim(["--headless", "--blocks", "2", "--devices", "2", "--duration", "2", "--seed", "80", "--callbacks", "2", "--progress", "0.2", "--cleanup"], {
      env: { ...process.env, BLOCKKIT_SERVER: baseUrl, BLOCKKIT_TOKEN: TOKEN },
      onStderr: (text, child) => {
        if (!sent && /^\[draining\] /m.test(text) && child.pid) {
          sent = true;
          process.kill(-child.pid, "SIGINT");
        }
      },
    });
    expect(sent).toBe(true);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toContain("interrupted");
    expect(run.stderr).toContain("cleanup: 2 blocks unpaired");
  });

  it("SIGTERM repeated to the whole group (as `timeout` sends it) ends a --workers 2 run once, with the summary, exit 143", { timeout: 60_000 }, async () => {
    let sent = false;
    const run = await sim(["--headless", "--blocks", "6", "--devices", "1", "--duration", "60", "--seed", "79", "--workers", "2", "--progress", "0.5", "--drain", "3"], {
      env: { ...process.env, BLOCKKIT_SERVER: baseUrl, BLOCKKIT_TOKEN: TOKEN },
      onStderr: (text, child) => {
        if (!sent && /\[0:0\d\/1:00\] blocks 6\/6/.test(text) && child.pid) {
          sent = true;
          process.kill(-child.pid, "SIGTERM");
          process.kill(-child.pid, "SIGTERM");
        }
      },
    });
    expect(sent).toBe(true);
    // 128 + SIGTERM's 15, as for a Ctrl-C (130): the run did not reach its end. Before: exit 0.
    expect(run.code, run.stderr).toBe(143);
    expect(run.stderr).toMatch(/blocks 6\/6 activated, events \d+\/\d+ acked/);
    expect(run.stderr).toContain("interrupted (SIGTERM)");
    expect(run.stderr).not.toContain("IPC channel is already disconnected");
  });

  // A signal before start() returned used to reach nothing that could take it (the runner's run loop,
  // the workers' message listeners, not there yet): the run went on to its end, or failed (exit 3).
  it("SIGINT during a --workers 2 start-up ends the run at once, exit 130", { timeout: 60_000 }, async () => {
    let sent = false;
    const run = await sim(["--headless", "--blocks", "4", "--devices", "1", "--duration", "60", "--seed", "81", "--workers", "2", "--cleanup", "--drain", "3"], {
      timeoutMs: 30_000,
      env: { ...process.env, BLOCKKIT_SERVER: baseUrl, BLOCKKIT_TOKEN: TOKEN },
      onStderr: (text, child) => {
        if (!sent && /^starting: 4 blocks in 2 worker processes$/m.test(text) && child.pid) {
          sent = true;
          process.kill(-child.pid, "SIGINT");
        }
      },
    });
    // The run's stderr with every assertion: this case failed once (in 2.2 s) in about 25 runs here, unexplained.
    expect(sent, run.stderr).toBe(true);
    expect(run.code, run.stderr).toBe(130);
    expect(run.stderr).toMatch(/interrupted \(SIGINT\) during start-up/);
    expect(Object.keys(await api.blocks()).filter((n) => n.startsWith("SIM81N")), run.stderr).toEqual([]);
    // What the server claimed is what the summary counts (an activation in flight at the stop is answered first).
    expect(unpairedAsActivated(run.stderr), run.stderr).toBe(true);
  });

  it("SIGTERM during a slow ramp stops what started, cleans up, and exits 143", { timeout: 60_000 }, async () => {
    let sent = false;
    const scenario = join(dir, "slow-ramp.yaml");
    writeFileSync(scenario, "blocks: { count: 3 }\ndevices: [{ type: temperature, rate: 1 }]\nramp_up: { blocks_per_s: 0.2 }\n");
    const run = await sim(["--headless", "--scenario", scenario, "--duration", "60", "--seed", "82", "--workers", "1", "--cleanup", "--drain", "3"], {
      timeoutMs: 30_000,
      env: { ...process.env, BLOCKKIT_SERVER: baseUrl, BLOCKKIT_TOKEN: TOKEN },
      onStderr: (text, child) => {
        if (!sent && /^starting: 3 blocks$/m.test(text) && child.pid) {
          sent = true;
          process.kill(child.pid, "SIGTERM");
        }
      },
    });
    expect(sent).toBe(true);
    expect(run.code, run.stderr).toBe(143);
    expect(run.stderr).toMatch(/interrupted \(SIGTERM\) during start-up, before the measured time: not a pass, exit 143/);
    // The summary says so too, and neither blames the server nor gives figures over the empty measured window.
    expect(run.stderr).toMatch(/^interrupted during start-up, before (any block activated|the measured time): thresholds not checked$/m);
    expect(run.stderr).not.toContain("FAIL: no block activated");
    expect(run.stderr).toMatch(/^simulator: load and bottleneck not measured \(0(\.\d+)? s measured: interrupted during start-up\)$/m);
    expect(run.stderr).not.toMatch(/simulator: CPU/);
    expect(run.stderr).toMatch(/^cleanup: \d blocks unpaired/m);
    expect(Object.keys(await api.blocks()).filter((n) => n.startsWith("SIM82N"))).toEqual([]);
    expect(unpairedAsActivated(run.stderr), run.stderr).toBe(true);
  });

  // The respawned child loads the command line and reads its scenario before its run listens for the
  // parent's forward; meanwhile SIGUSR2's default action ended it, and the command with exit 1.
  it("a SIGINT to the command's process while its child is still loading ends the run as a Ctrl-C, exit 130", { timeout: 60_000 }, async () => {
    const sent: { pid: Promise<number> | null } = { pid: null };
    const run = await sim(["--headless", "--blocks", "2", "--devices", "1", "--duration", "60", "--seed", "84", "--callbacks", "0", "--drain", "3"], {
      timeoutMs: 30_000,
      env: { ...process.env, BLOCKKIT_SERVER: baseUrl, BLOCKKIT_TOKEN: TOKEN, BLOCKKIT_SIM_CHILD: "" },
      onSpawn: (child) => {
        const pid = child.pid as number;
        // As soon as the child exists: it has not loaded its first module yet.
        sent.pid = waitFor("the respawned child", () => respawned(pid), 10_000, 1).then((c) => {
          process.kill(pid, "SIGINT");
          return c;
        });
      },
    });
    expect(await sent.pid, run.stderr).toBeGreaterThan(0);
    expect(run.code, run.stderr).toBe(130);
    expect(run.stderr).toMatch(/^stopping: /m);
    expect(run.stderr).toMatch(/interrupted \(SIGINT\)/);
  });

  // `kill -INT PID` of the command (a script, a supervisor) reaches only the respawning parent, which
  // ignored it: the run went on to its end. It now tells the child, as a Ctrl-C.
  it("a SIGINT to the command's process alone stops the run as a Ctrl-C, exit 130", { timeout: 60_000 }, async () => {
    let sent = false;
    const run = await sim(["--headless", "--blocks", "2", "--devices", "1", "--duration", "60", "--seed", "83", "--callbacks", "0", "--cleanup", "--progress", "0.5", "--drain", "3"], {
      timeoutMs: 30_000,
      env: { ...process.env, BLOCKKIT_SERVER: baseUrl, BLOCKKIT_TOKEN: TOKEN, BLOCKKIT_SIM_CHILD: "" },
      onStderr: (text, child) => {
        if (!sent && /\[0:0\d\/1:00\] blocks 2\/2/.test(text) && child.pid) {
          sent = true;
          process.kill(child.pid, "SIGINT");
        }
      },
    });
    expect(sent).toBe(true);
    expect(run.code, run.stderr).toBe(130);
    expect(run.stderr).toMatch(/^stopping: waiting up to 3 s for the activations, readings and commands in flight, then cleaning up/m);
    expect(run.stderr).toMatch(/interrupted \(SIGINT\) after [\d.]+ of 60 s measured: not a pass, exit 130/);
    expect(run.stderr).toContain("cleanup: 2 blocks unpaired, 0 callbacks removed");
  });
});
