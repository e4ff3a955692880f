/**
 * Simulator capacity and overhead (`npm run bench simulator`). The server runs in its own process,
 * so the CPU measured here is the simulator's alone.
 *
 * 1. Capacity against a protocol sink (bench/fixtures/block-sink.ts: answers activation, readings
 *    and held long-polls, stores nothing), so that only the simulator can be the limit: a fleet of
 *    10 000 blocks × one reading per second through real BlockAgents; the acknowledged rate against
 *    the offered one, the simulator's CPU (percent of one core) and event-loop delay.
 * 2. Overhead: CPU microseconds per acknowledged event of the simulator (agents, outboxes,
 *    long-polls, metrics) against a bare loop that only POSTs the same /data requests, at the same
 *    fleet size and rate, to the same sink.
 * 3. The same fleet shape against the real server (1 000 and 10 000 blocks by default): who limits
 *    the run.
 * 4. The fleet in several processes: `blockkit sim --workers 2` (the built CLI, as a user runs it)
 *    against the sink with 40 000 blocks by default, the aim on a 2-core machine; the merged
 *    report's acknowledged rate against the offered one, CPU (all processes and the busiest one) and
 *    ack latency. 20 000 held polls per process pass the usual hard limit of open files, so the
 *    bench raises its own limits first where it may (as root, `prlimit`); the sink and the
 *    simulator inherit them.
 *
 * Each run ramps its blocks up, then warms up for max(3, blocks / 1000) seconds before measuring,
 * so that readings held back while ten thousand blocks activated are sent before the window opens.
 *
 * Env: BENCH_SIM_SINK (block count against the sink, default 10000; 0 skips), BENCH_SIM_STEPS (block
 * counts against the server, comma-separated, default 1000,10000; empty skips), BENCH_SIM_SECONDS
 * (measured seconds, default 6), BENCH_SIM_FLEET (blocks of the several-process run against the
 * sink, default 40000; 0 skips, and so does BENCH_SIM_SINK=0), BENCH_SIM_WORKERS (its processes,
 * default 2), BENCH_SIM_FILES (the open-file limit to raise to, default 65536), BENCH_ONLY (one part:
 * sink, fleet or server).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiClient } from "../protocol/api-client.js";
import { descriptorsNeeded, openFileLimit } from "../simulator/fd-limit.js";
import { validateScenario } from "../simulator/scenario/parse.js";
import { startBare, startServer } from "./fixtures/procs.js";
import { figure, machine } from "./lib.js";

// The built simulator (bench/run.ts builds first), as it runs in production.
const RUNNER = "../dist/simulator/runner.js";
const { SimRunner } = (await import(RUNNER)) as typeof import("../simulator/runner.js");
const TRANSPORT = "../dist/simulator/fleet/transport.js";
const { fleetTransport } = (await import(TRANSPORT)) as typeof import("../simulator/fleet/transport.js");
const TOKEN = "bench-admin-token-0123456789";
const SINK = Number(process.env.BENCH_SIM_SINK ?? 10_000);
const STEPS = (process.env.BENCH_SIM_STEPS ?? "1000,10000").split(",").map(Number).filter((n) => n > 0);
const SECONDS = Number(process.env.BENCH_SIM_SECONDS ?? 6);
const RAMP = Number(process.env.BENCH_SIM_RAMP ?? 1000);
const WANTED_FLEET = Number(process.env.BENCH_SIM_FLEET ?? 40_000);
const WORKERS = Number(process.env.BENCH_SIM_WORKERS ?? 2);
const FILES = Number(process.env.BENCH_SIM_FILES ?? 65_536);

function scenario(blocks: number, seed: number, perSecond: number) {
  return validateScenario(scenarioDoc(blocks, seed, perSecond));
}

function scenarioDoc(blocks: number, seed: number, perSecond: number) {
  return {
    name: `capacity-${blocks}`,
    seed,
    blocks: { count: blocks, node_id: "BENCH{seed}N{index:8}" },
    devices: [{ type: "temperature", rate: 1 }],
    ramp_up: { blocks_per_s: perSecond, max_pending: 500 },
    warmup_s: Math.max(3, Math.round(blocks / 1000)),
    duration_s: SECONDS,
    commands: { rate: 0 },
    callbacks: { devices: 0 },
  };
}

/** `poll_network 14776, activate_network 12`: the errors by kind, most first. */
function byKind(errors: Record<string, number>): string {
  return Object.entries(errors)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
}

/** CPU time of another process (the server or the sink), ms, from /proc (Linux; NaN elsewhere). */
function cpuMsOf(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

async function capacity(label: string, baseUrl: string, blocks: number, seed: number, rampPerSecond: number, peer: { name: string; pid?: number }): Promise<{ cpuUsPerEvent: number }> {
  const runner = new SimRunner({ scenario: scenario(blocks, seed, rampPerSecond), baseUrl, token: TOKEN, drainTimeoutMs: 10_000 });
  const started = performance.now();
  let rampedAt = Number.NaN;
  // The peer's CPU over the measured window (the simulator's own comes from its report).
  let peerFrom: { cpu: number; at: number } | null = null;
  let peerPercent = Number.NaN;
  const watch = setInterval(() => {
    if (Number.isNaN(rampedAt) && runner.fleet.activated >= blocks) rampedAt = performance.now();
    if (peerFrom === null && runner.phase === "running") peerFrom = { cpu: cpuMsOf(peer.pid), at: performance.now() };
    if (peerFrom !== null && Number.isNaN(peerPercent) && runner.phase !== "running") {
      peerPercent = (100 * (cpuMsOf(peer.pid) - peerFrom.cpu)) / (performance.now() - peerFrom.at);
    }
  }, 50);
  await runner.start();
  const report = await runner.finished;
  clearInterval(watch);
  // A run without a backlog drains at once: the window closed between two looks.
  if (peerFrom !== null && Number.isNaN(peerPercent)) {
    const from = peerFrom as { cpu: number; at: number };
    peerPercent = (100 * (cpuMsOf(peer.pid) - from.cpu)) / (performance.now() - from.at);
  }
  await runner.stop();
  const c = report.counts;
  process.stdout.write(`\n${label}: ${blocks} blocks × 1 reading/s (measured ${report.duration_s} s):\n`);
  figure("  blocks activated", report.blocks.activated, `of ${blocks}`);
  figure("  activation of the fleet", (rampedAt - started) / 1000, `s (${Math.round(blocks / ((rampedAt - started) / 1000))} blocks/s, ramp ${rampPerSecond}/s, 500 pending at most)`);
  figure("  acknowledged", report.events_per_s, "events/s", { name: "offered", value: blocks });
  figure("  simulator CPU", report.simulator.cpu_percent, "% of one core");
  figure(`  ${peer.name} CPU`, peerPercent, "% of one core");
  figure("  simulator event-loop delay p99", report.simulator.loop_delay_p99_ms, "ms");
  figure("  ingest ack p50", report.latency_ms.ingest.p50 ?? Number.NaN, "ms");
  figure("  ingest ack p99", report.latency_ms.ingest.p99 ?? Number.NaN, "ms");
  figure("  simulator CPU per event", report.simulator.cpu_us_per_event ?? Number.NaN, "µs");
  figure("  errors", c.errors, byKind(report.errors_by_kind));
  process.stdout.write(`  limited by: ${report.simulator.bottleneck} (${report.simulator.reason})\n`);
  return { cpuUsPerEvent: report.simulator.cpu_us_per_event ?? Number.NaN };
}

/**
 * The baseline: only the same HTTP requests. Tokens fetched first; then one 10 ms tick sends the
 * POST /data of every block whose phase falls in it (each block once a second, phases spread over
 * the second as the simulator's are), through the simulator's own fleet transport, shaped as the
 * fleet's: 32 kept-alive short-call connections, 8 calls pipelined on each at most. No agent, no outbox, no long-polls, no metrics.
 */
async function bareLoop(baseUrl: string, blocks: number): Promise<{ cpuUsPerEvent: number; ackedPerSecond: number; cpuPercent: number }> {
  const api = new ApiClient({ baseUrl, token: TOKEN });
  const nodes = Array.from({ length: blocks }, (_v, i) => `BARE${String(i).padStart(8, "0")}`);
  const tokens: string[] = [];
  for (let i = 0; i < nodes.length; i += 500) tokens.push(...(await Promise.all(nodes.slice(i, i + 500).map((n) => api.activateDirect(n)))));
  const http = fleetTransport();
  const { transport } = http;
  let acked = 0;
  let failed = 0;
  let seq = 0;
  const send = (i: number): void => {
    const body = JSON.stringify({ G: "1", V: 0, D: 9, DA: (20 + Math.random()).toFixed(1), TIMESTAMP: Date.now(), KEY: `bare.${(seq++).toString(36)}` });
    transport
      .send({ method: "POST", url: `${baseUrl}/block/${nodes[i]}/data`, headers: { "x-service-token": tokens[i] as string, "content-type": "application/json" }, body, timeoutMs: 15_000 })
      .then(
        (res) => {
          if (res.status === 200) acked++;
          else failed++;
        },
        () => {
          failed++;
        },
      );
  };
  const slots: number[][] = Array.from({ length: 100 }, () => []);
  for (let i = 0; i < blocks; i++) (slots[Math.floor(Math.random() * 100)] as number[]).push(i);
  const t0 = performance.now();
  let next = 0;
  // Each tick sends every slot that came due since the last one, so a late tick does not lose rate.
  const ticker = setInterval(() => {
    const due = Math.floor((performance.now() - t0) / 10);
    for (; next <= due; next++) for (const i of slots[next % 100] as number[]) send(i);
  }, 10);
  await new Promise((r) => setTimeout(r, 3000));
  const cpu0 = process.cpuUsage();
  const acked0 = acked;
  const w0 = performance.now();
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  const cpu = process.cpuUsage(cpu0);
  const wallS = (performance.now() - w0) / 1000;
  const n = acked - acked0;
  clearInterval(ticker);
  await http.close();
  const result = { cpuUsPerEvent: (cpu.user + cpu.system) / n, ackedPerSecond: n / wallS, cpuPercent: (cpu.user + cpu.system) / 1e4 / wallS };
  process.stdout.write(`\nbare loop, ${blocks} blocks × 1 POST/s (the simulator's transport: 32 connections, 8 calls pipelined on each):\n`);
  figure("  acknowledged", result.ackedPerSecond, "events/s", { name: "offered", value: blocks });
  figure("  CPU", result.cpuPercent, "% of one core");
  figure("  failed", failed, "requests");
  return result;
}

async function againstSink(): Promise<void> {
  const sink = await startBare("bench/fixtures/block-sink.ts");
  try {
    const sinkUrl = `http://127.0.0.1:${sink.port}/rest/v0`;
    const sim = await capacity("simulator against a protocol sink", sinkUrl, SINK, 1, RAMP, { name: "sink", pid: sink.child.pid });
    const bare = await bareLoop(sinkUrl, SINK);
    process.stdout.write(`\noverhead per event at ${SINK} blocks × 1/s (same sink):\n`);
    figure("  bare HTTP loop CPU", bare.cpuUsPerEvent, "µs/event");
    figure("  simulator CPU", sim.cpuUsPerEvent, "µs/event", { name: "bare loop", value: bare.cpuUsPerEvent });
    figure("  simulator overhead", sim.cpuUsPerEvent - bare.cpuUsPerEvent, "µs/event over the bare loop");
  } finally {
    await sink.stop();
  }
}

/** Raises this process's open-file limits (soft and hard) to `n` where allowed; children inherit them. */
function raiseFiles(n: number): string {
  const r = spawnSync("prlimit", ["--pid", String(process.pid), `--nofile=${n}:${n}`], { encoding: "utf8" });
  return r.status === 0 ? `open files raised to ${n}` : `open files not raised to ${n}: ${(r.stderr || r.error?.message || "").trim()}`;
}

/**
 * The largest fleet up to `wanted` that fits the open-file limit: the sink holds every block's poll
 * in one process, each simulator process its share (simulator/fd-limit.ts). Rounded to 1,000.
 */
function fleetThatFits(wanted: number): { blocks: number; why: string } {
  const limit = openFileLimit();
  if (limit === null || !Number.isFinite(limit.hard)) return { blocks: wanted, why: "" };
  const perProcess = (n: number): number => descriptorsNeeded(Math.ceil(n / WORKERS), 1);
  const sink = (n: number): number => n + WORKERS * 2 * 64 + 128;
  let n = wanted;
  while (n > 1000 && (perProcess(n) > limit.hard || sink(n) > limit.hard)) n -= 1000;
  return n === wanted ? { blocks: n, why: "" } : { blocks: n, why: `; ${wanted} do not fit the hard limit of ${limit.hard} open files per process (the sink holds every poll): ${n} instead` };
}

/** `blockkit sim --workers N` against the sink, headless, as a user runs it; the merged report. */
async function fleetInProcesses(): Promise<void> {
  const files = raiseFiles(FILES);
  const { blocks: FLEET, why } = fleetThatFits(WANTED_FLEET);
  const sink = await startBare("bench/fixtures/block-sink.ts");
  const dir = mkdtempSync(join(tmpdir(), "blockkit-bench-fleet-"));
  try {
    const scenarioFile = join(dir, "fleet.json");
    const reportFile = join(dir, "report.json");
    writeFileSync(scenarioFile, JSON.stringify(scenarioDoc(FLEET, 3, RAMP)));
    const args = ["dist/cli/index.js", "sim", "--headless", "--server", `http://127.0.0.1:${sink.port}/rest/v0`, "--token", TOKEN, "--scenario", scenarioFile, "--workers", String(WORKERS), "--report", reportFile, "--progress", "10", "--drain", "10"];
    const child = spawn(process.execPath, args, { cwd: join(import.meta.dirname, ".."), stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
    const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
    process.stdout.write(`\nblockkit sim --workers ${WORKERS} against the sink: ${FLEET} blocks × 1 reading/s (${files}${why}):\n`);
    if (code !== 0 && code !== 1) {
      process.stdout.write(`  the run failed (exit ${code}):\n${stderr}\n`);
      return;
    }
    const r = JSON.parse(readFileSync(reportFile, "utf8")) as import("../simulator/merge.js").MergedReport;
    figure("  blocks activated", r.blocks.activated, `of ${FLEET}`);
    figure("  acknowledged", r.events_per_s, "events/s", { name: "offered", value: FLEET });
    figure("  simulator CPU, all processes", r.simulator.cpu_percent_total, `% of one core (${r.simulator.processes} processes)`);
    figure("  simulator CPU, busiest process", r.simulator.cpu_percent, "% of one core");
    figure("  simulator CPU per event", r.simulator.cpu_us_per_event ?? Number.NaN, "µs");
    figure("  ingest ack p50", r.latency_ms.ingest.p50 ?? Number.NaN, "ms");
    figure("  ingest ack p99", r.latency_ms.ingest.p99 ?? Number.NaN, "ms");
    figure("  send window full", r.simulator.send_window.full_percent, "% of the time (most limited process)");
    figure("  errors", r.counts.errors, byKind(r.errors_by_kind));
    process.stdout.write(`  limited by: ${r.simulator.bottleneck} (${r.simulator.reason})\n`);
  } finally {
    await sink.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  process.stdout.write(`machine: ${machine()}\n`);
  const only = process.env.BENCH_ONLY;
  const part = (name: string): boolean => only === undefined || only === "" || only === name;
  if (SINK > 0 && part("sink")) await againstSink();
  // BENCH_SIM_SINK=0 (the server steps alone) skips it too, unless it is the part asked for.
  if (WANTED_FLEET > 0 && (only === "fleet" || (SINK > 0 && part("fleet")))) await fleetInProcesses();
  if (STEPS.length === 0 || !part("server")) return;
  const dir = mkdtempSync(join(tmpdir(), "blockkit-bench-sim-"));
  const server = await startServer(dir, TOKEN);
  try {
    for (const [i, blocks] of STEPS.entries()) {
      await capacity("simulator against the server", `http://127.0.0.1:${server.port}/rest/v0`, blocks, 100 + i, 800, { name: "server", pid: server.child.pid });
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
