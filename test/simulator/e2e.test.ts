/**
 * End to end: a real server on loopback, `blockkit sim --headless` as a child process with 50 blocks
 * for a few seconds; the report's counts must match what the server stored, and a broken threshold
 * must make the exit code non-zero. Also the other transport, a bad scenario, the open-file limit,
 * and `blockkit sim replay`. How a run ends on a signal: e2e-signals.test.ts.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Report } from "../../simulator/report.js";
import { TOKEN, api, baseUrl, dir, sim, useServer } from "./e2e-helpers.js";

describe("blockkit sim against a real server", () => {
  useServer();

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
