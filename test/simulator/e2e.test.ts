/**
 * End to end: a real server on loopback, `blockkit sim --headless` as a child process with 50 blocks
 * for a few seconds; the report's counts must match what the server stored, and a broken threshold
 * must make the exit code non-zero.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiClient } from "../../protocol/api-client.js";
import { BlockkitServer } from "../../server/controller.js";
import type { Report } from "../../simulator/report.js";

const TOKEN = "admin-token-0123456789";
const ROOT = join(import.meta.dirname, "..", "..");

interface Run {
  code: number | null;
  stderr: string;
}

const children = new Set<ChildProcess>();

interface SimHow {
  timeoutMs?: number;
  /** Shell lines run before the command (e.g. `ulimit -n 300`). */
  shell?: string;
  env?: NodeJS.ProcessEnv;
  /** Called with each chunk of stderr and the child (in its own process group, as a terminal's job). */
  onStderr?: (text: string, child: ChildProcess) => void;
}

function sim(args: string[], timeoutOrHow: number | SimHow = 40_000): Promise<Run> {
  const how = typeof timeoutOrHow === "number" ? { timeoutMs: timeoutOrHow } : timeoutOrHow;
  const timeoutMs = how.timeoutMs ?? 40_000;
  return new Promise((resolve, reject) => {
    const argv = [process.execPath, "--import", "tsx", "cli/index.ts", "sim", ...args];
    const child = how.shell
      ? spawn("/bin/sh", ["-c", `${how.shell}; exec "$@"`, "sh", ...argv], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: how.env, detached: true })
      : spawn(argv[0] as string, argv.slice(1), { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: how.env ?? process.env, detached: true });
    children.add(child);
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
  let server: BlockkitServer;
  let dir: string;
  let baseUrl: string;
  let api: ApiClient;

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

  it("50 blocks, chaos included: the report's counts are what the server stored", { timeout: 60_000 }, async () => {
    const scenario = join(dir, "fleet.yaml");
    writeFileSync(
      scenario,
      [
        "name: e2e",
        "blocks: { count: 50, node_id: 'EEE{seed}B{index:8}', two_legged: 2 }",
        "devices:",
        "  - { type: temperature, rate: 2 }",
        "  - { type: relay }",
        "ramp_up: { blocks_per_s: 200 }",
        "commands: { rate: 10 }",
        "callbacks: { devices: 5 }",
        "chaos:",
        "  - { at_s: 0.5, action: drop, blocks: 2, for_s: 1 }",
        "  - { at_s: 1, action: pause, blocks: 2, for_s: 1 }",
        "  - { at_s: 1.5, action: burst, blocks: 2, events: 20 }",
        "thresholds: ['errors == 0', 'events_acked > 100', 'commands_lost == 0']",
      ].join("\n"),
    );
    const reportFile = join(dir, "report.json");
    const run = await sim(["--headless", "--server", baseUrl, "--token", TOKEN, "--scenario", scenario, "--duration", "3", "--seed", "4", "--report", reportFile, "--progress", "1", "--drain", "8"]);
    expect(run.stderr).toMatch(/\[0:0\d\/0:03\] blocks \d+\/50/);
    expect(run.stderr).toContain("chaos: dropped the connection of");
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(readFileSync(reportFile, "utf8")) as Report;

    expect(report.blocks).toEqual({ planned: 50, activated: 50, failed: 0, in_flight_at_stop: 0 });
    const blocks = await api.blocks();
    expect(Object.keys(blocks).filter((n) => n.startsWith("EEE4B")).length).toBe(50);

    // Every acknowledged reading is stored once (idempotency keys cover the replays after the drop).
    const devices = Object.keys(await api.devices()).filter((g) => g.startsWith("EEE4B"));
    expect(devices.length).toBe(100);
    let stored = 0;
    for (const guid of devices) stored += (await api.history(guid, { from: 0 })).length;
    expect(report.counts.events_sent).toBe(report.counts.events_acked);
    expect(stored).toBe(report.counts.events_acked);
    // 50 blocks x 2 readings/s x 3 s is 300 at most, less what the chaos drops and pauses cost and
    // what a loaded machine does not get to send in time (279 seen on 2 busy cores): half of it.
    expect(report.counts.events_acked).toBeGreaterThan(150);

    expect(report.counts.errors).toBe(0);
    expect(report.counts.commands_sent).toBeGreaterThan(10);
    // A command answered on a long-poll that chaos cut at that very moment may still be on its way.
    expect(report.counts.commands_received + report.counts.commands_in_flight, run.stderr).toBe(report.counts.commands_sent);
    expect(report.counts.commands_in_flight).toBeLessThanOrEqual(2);
    expect(report.latency_ms.command.count).toBeGreaterThan(0);
    expect(report.latency_ms.ingest.p99).toBeGreaterThan(0);
    expect(report.counts.callback_devices).toBe(5);
    expect(report.simulator.cpu_percent).toBeGreaterThan(0);
    expect(report.thresholds.every((t) => t.passed)).toBe(true);
    expect(report.passed).toBe(true);
  });

  it("sends the readings through undici with --transport undici, and refuses a client it does not know", { timeout: 30_000 }, async () => {
    const reportFile = join(dir, "undici-report.json");
    const args = ["--headless", "--server", baseUrl, "--token", TOKEN, "--blocks", "3", "--devices", "1", "--rate", "5", "--duration", "1", "--seed", "9", "--workers", "1"];
    const run = await sim([...args, "--transport", "undici", "--report", reportFile]);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(readFileSync(reportFile, "utf8")) as Report;
    expect(report.counts.events_acked).toBeGreaterThan(0);
    expect(report.counts.errors).toBe(0);
    const bad = await sim([...args, "--transport", "curl"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/Allowed choices are http1, undici/);
  });

  it("a broken threshold gives exit code 1 and says which", { timeout: 30_000 }, async () => {
    const scenario = join(dir, "strict.json");
    writeFileSync(scenario, JSON.stringify({ blocks: { count: 3, node_id: "STRICT{index:8}" }, devices: [{ type: "temperature", rate: 5 }], thresholds: ["events_acked < 1"] }));
    const reportFile = join(dir, "strict-report.json");
    const run = await sim(["--server", baseUrl, "--token", TOKEN, "--scenario", scenario, "--duration", "1", "--report", reportFile]);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/threshold FAIL events_acked < 1 \(actual \d+\)/);
    expect((JSON.parse(readFileSync(reportFile, "utf8")) as Report).passed).toBe(false);
  });

  it("replays a gateway recording as a block (blockkit sim replay)", { timeout: 30_000 }, async () => {
    const file = join(dir, "frames.jsonl");
    const t = Date.now() - 60_000;
    writeFileSync(
      file,
      [
        { t, link: "serial", frame: '{"DEVICE":[{"G":"0","V":0,"D":9,"DA":"19.5"}]}' },
        { t: t + 10, link: "serial", frame: '{"DEVICE":[{"G":"0","V":0,"D":9,"DA":"19.6"}]}' },
        { t: t + 20, link: "mqtt", topic: "blockkit/2_0_5/data", frame: "1" },
        { t: t + 30, link: "serial", frame: "garbage" },
      ]
        .map((l) => JSON.stringify(l))
        .join("\n"),
    );
    const out = join(dir, "replay.json");
    const run = await sim(["replay", file, "--server", baseUrl, "--token", TOKEN, "--node-id", "REPLAYCLI0001", "--speed", "10", "--report", out]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/skipped line 4: /);
    expect(JSON.parse(readFileSync(out, "utf8"))).toMatchObject({ nodeId: "REPLAYCLI0001", sent: 3, acked: 3, errors: 0 });
    expect((await api.history("REPLAYCLI0001_0_0_9", { from: 0 })).map((p) => p.v)).toEqual([19.5, 19.6]);
  });

  it("refuses a bad scenario with every problem by path (exit 2)", async () => {
    const scenario = join(dir, "bad.yaml");
    writeFileSync(scenario, "devices:\n  - type: toaster\n  - type: relay\n    generator: { kind: sine }\nthresholds: ['p99 < 1']\n");
    const run = await sim(["--server", baseUrl, "--token", TOKEN, "--scenario", scenario]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('devices.0.type: unknown device type "toaster"');
    expect(run.stderr).toMatch(/devices\.1\.generator\.period_s: required, a number/);
    expect(run.stderr).toMatch(/thresholds\.0: unknown metric "p99"/);
  });

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

  it("raises the soft limit of open files to the hard one, and refuses a fleet that cannot fit", { timeout: 60_000 }, async () => {
    const args = ["--headless", "--server", baseUrl, "--token", TOKEN, "--blocks", "250", "--devices", "1", "--duration", "1", "--seed", "78", "--cleanup", "--workers", "1"];
    // A soft limit of 300 with a higher hard limit: the simulator raises it and runs.
    const raised = await sim(args, { shell: "ulimit -S -n 300" });
    expect(raised.code, raised.stderr).toBe(0);
    expect(raised.stderr).toContain("blocks 250/250 activated");
    // Both limits at 300: it cannot, and says what to do.
    const refused = await sim(args, { shell: "ulimit -n 300" });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/250 blocks need about (\d+) open files and a process may open 300, hard limit 300: raise the limit with `ulimit -n \1`/);
    expect(refused.stderr).toContain("spread them over 4 processes or more with `--workers 4`");
  });

  it("names a replayed line whose frame is garbage for what it is", { timeout: 30_000 }, async () => {
    const file = join(dir, "garbage.jsonl");
    writeFileSync(file, [{ t: 1, link: "serial", frame: '{"DEVICE":[{"G":"0","V":0,"D":9,"DA":"1"}]}' }, { t: 2, link: "serial", frame: "%%garbage%%" }].map((l) => JSON.stringify(l)).join("\n"));
    const run = await sim(["replay", file, "--server", baseUrl, "--token", TOKEN, "--node-id", "REPLAYGARBAGE1", "--instant"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('skipped line 2: the serial frame "%%garbage%%" is unusable');
  });
});
