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
 *    fleet size and rate, to the same sink. The CPU counted is each one's own process's (user +
 *    system, process.cpuUsage: GC and undici included), never the sink's. This machine's speed drifts
 *    (the bare loop alone gave 13.7 to 27.4 µs/event in runs minutes apart), so the two are measured
 *    in alternating windows of one run (bench/fixtures/sink-pairs.ts): the simulator in this process,
 *    the bare loop in a child (bench/fixtures/bare-loop.ts; a process of its own, so that neither's
 *    garbage collections walk the other's heap), both started and ready, each sending only in its
 *    own windows: BENCH_SIM_SINK_PAIRS pairs (12) of BENCH_SIM_PAIR_SECONDS-second windows (5), after
 *    BENCH_SIM_PAIR_SETTLE seconds (1) of sending each, the order flipped every pair. The figure is the
 *    median of the per-pair ratios, printed with its quartiles and range. The simulator is paused by
 *    its clock (SimRunner's `clock` option, a PausableClock): its scheduler sends no reading while
 *    the clock stands and catches none up after, while its 10,000 long-polls stay held and are
 *    renewed on their real timers, so each window holds its steady share of poll renewals and the
 *    sink holds the same polls in both sides' windows. (SimRunner.pause() would stop the agents:
 *    every resume would re-open 10,000 polls at once and no window would see a renewal.) Running
 *    both at once instead would make each the other's load on two cores, the sink serving both.
 *    BENCH_SIM_SINK_PAIRS=0: the comparison of before, a whole run of each, one after the other.
 *    Six runs of each, alternated: medians 1.91–2.02 ×, whole runs 1.82–2.17 × (docs/performance-simulator.md).
 * 3. The same fleet shape against the real server (1 000 and 10 000 blocks by default): who limits
 *    the run.
 * 4. The fleet in several processes: `blockkit sim --workers 2` (the built CLI, as a user runs it)
 *    against the sink with 40 000 blocks by default, the issue's aim on a 2-core machine; the merged
 *    report's acknowledged rate against the offered one, CPU (all processes and the busiest one),
 *    ack latency and the most descriptors a process held (bench/fixtures/sim-fleet.ts). Every block
 *    holds a poll on both ends, so the sink runs in one process per 12,000 blocks (node:cluster,
 *    bench/fixtures/block-sink.ts), and a fleet whose worker shares do not fit the open-file limit
 *    runs with the fewest workers that fit, saying so. The bench first raises its own limits where
 *    it may (as root with CAP_SYS_RESOURCE, `prlimit`); the sink and the simulator inherit them.
 *
 * Each run ramps its blocks up, then warms up for max(3, blocks / 1000) seconds before measuring,
 * so that readings held back while ten thousand blocks activated are sent before the window opens.
 *
 * Env: BENCH_SIM_SINK (block count against the sink, default 10000; 0 skips), BENCH_SIM_STEPS (block
 * counts against the server, comma-separated, default 1000,10000; empty skips), BENCH_SIM_SECONDS
 * (measured seconds, default 6), BENCH_SIM_FLEET (blocks of the several-process run, comma-separated
 * for several runs, each N or sink:N or server:N, default 40000; 0 skips, and so does BENCH_SIM_SINK=0 unless BENCH_ONLY=fleet),
 * BENCH_SIM_ROUNDS (runs of each size, default 1), BENCH_SIM_WORKERS (its processes, default 2),
 * BENCH_SIM_FLEET_AGAINST (`server`: against one real SQLite server instead of the sink),
 * BENCH_SIM_SINK_PROCESSES (default: one per 12,000 blocks), BENCH_SIM_FILES (the open-file limit to
 * raise to, default 65536), BENCH_ONLY (one part: sink, fleet or server), BENCH_SIM_PROFILE (a file:
 * the simulator's measured window against the sink is profiled there, a .cpuprofile that
 * `node --import tsx bench/fixtures/profile-top.ts FILE` sums by function and by file; BENCH_SIM_PROFILE_US
 * its sampling interval, default 100), BENCH_SIM_SINK_PAIRS (default 12; 0: whole runs instead,
 * BENCH_SIM_SINK_ROUNDS of them, default 1, every other round the bare loop first, median printed).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { validateScenario } from "../simulator/scenario/parse.js";
import { cpuTimeMs as cpuMsOf } from "./fixtures/proc-stats.js";
import { bareSender } from "./fixtures/bare-send.js";
import { startBare, startServer } from "./fixtures/procs.js";
import { profiler } from "./fixtures/profiler.js";
import { fleetRun, fleetTable, workersFor } from "./fixtures/sim-fleet.js";
import { sinkPairs } from "./fixtures/sink-pairs.js";
import { figure, machine, median, sendEverySecond } from "./lib.js";

// The built simulator (bench/run.ts builds first), as it runs in production.
const RUNNER = "../dist/simulator/runner.js";
const { SimRunner } = (await import(RUNNER)) as typeof import("../simulator/runner.js");
const TOKEN = "bench-admin-token-0123456789";
const SINK = Number(process.env.BENCH_SIM_SINK ?? 10_000);
const STEPS = (process.env.BENCH_SIM_STEPS ?? "1000,10000").split(",").map(Number).filter((n) => n > 0);
const SECONDS = Number(process.env.BENCH_SIM_SECONDS ?? 6);
const RAMP = Number(process.env.BENCH_SIM_RAMP ?? 1000);
const FLEET_AGAINST = process.env.BENCH_SIM_FLEET_AGAINST === "server" ? "server" : "sink";
/** `N` (against the sink, or BENCH_SIM_FLEET_AGAINST) or `server:N`, `sink:N`. */
const FLEETS = (process.env.BENCH_SIM_FLEET ?? "40000")
  .split(",")
  .map((spec) => {
    const [peer, n] = spec.includes(":") ? spec.split(":") : [FLEET_AGAINST, spec];
    if (peer !== "sink" && peer !== "server") throw new Error(`BENCH_SIM_FLEET: "${spec}" is not N, sink:N or server:N`);
    return { against: peer as "sink" | "server", blocks: Number(n) };
  })
  .filter((f) => f.blocks > 0);
const ROUNDS = Number(process.env.BENCH_SIM_ROUNDS ?? 1);
const WORKERS = Number(process.env.BENCH_SIM_WORKERS ?? 2);
const FILES = Number(process.env.BENCH_SIM_FILES ?? 65_536);
const PROFILE = process.env.BENCH_SIM_PROFILE ?? "";
/** Rounds of the simulator against its bare loop (alternating which goes first), for a median ratio. */
const SINK_ROUNDS = Number(process.env.BENCH_SIM_SINK_ROUNDS ?? 1);
const PAIRS = Number(process.env.BENCH_SIM_SINK_PAIRS ?? 12);
const PAIR_SECONDS = Number(process.env.BENCH_SIM_PAIR_SECONDS ?? 5);
const PAIR_SETTLE = Number(process.env.BENCH_SIM_PAIR_SETTLE ?? 1);

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

async function capacity(label: string, baseUrl: string, blocks: number, seed: number, rampPerSecond: number, peer: { name: string; pid?: number }, profileTo = ""): Promise<{ cpuUsPerEvent: number }> {
  const prof = profiler(profileTo);
  const runner = new SimRunner({ scenario: scenario(blocks, seed, rampPerSecond), baseUrl, token: TOKEN, drainTimeoutMs: 10_000 });
  const started = performance.now();
  let rampedAt = Number.NaN;
  // The peer's CPU over the measured window (the simulator's own comes from its report).
  let peerFrom: { cpu: number; at: number } | null = null;
  let peerPercent = Number.NaN;
  const watch = setInterval(() => {
    if (Number.isNaN(rampedAt) && runner.fleet.activated >= blocks) rampedAt = performance.now();
    if (peerFrom === null && runner.phase === "running") {
      peerFrom = { cpu: cpuMsOf(peer.pid), at: performance.now() };
      prof.start();
    }
    if (peerFrom !== null && Number.isNaN(peerPercent) && runner.phase !== "running") {
      peerPercent = (100 * (cpuMsOf(peer.pid) - peerFrom.cpu)) / (performance.now() - peerFrom.at);
    }
  }, 50);
  await runner.start();
  const report = await runner.finished;
  clearInterval(watch);
  await prof.stop();
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
async function bareLoop(baseUrl: string, blocks: number, profileTo = ""): Promise<{ cpuUsPerEvent: number; ackedPerSecond: number; cpuPercent: number }> {
  const prof = profiler(profileTo);
  const bare = await bareSender(baseUrl, TOKEN, blocks);
  const send = (i: number): void => bare.send(i);
  const stopSending = sendEverySecond(blocks, send);
  await new Promise((r) => setTimeout(r, 3000));
  prof.start();
  const cpu0 = process.cpuUsage();
  const acked0 = bare.acked;
  const w0 = performance.now();
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  const cpu = process.cpuUsage(cpu0);
  const wallS = (performance.now() - w0) / 1000;
  const n = bare.acked - acked0;
  await prof.stop();
  stopSending();
  await bare.close();
  const result = { cpuUsPerEvent: (cpu.user + cpu.system) / n, ackedPerSecond: n / wallS, cpuPercent: (cpu.user + cpu.system) / 1e4 / wallS };
  process.stdout.write(`\nbare loop, ${blocks} blocks × 1 POST/s (the simulator's transport: 32 connections, 8 calls pipelined on each):\n`);
  figure("  acknowledged", result.ackedPerSecond, "events/s", { name: "offered", value: blocks });
  figure("  CPU", result.cpuPercent, "% of one core");
  figure("  failed", bare.failed, "requests");
  return result;
}

async function againstSink(): Promise<void> {
  const sink = await startBare("bench/fixtures/block-sink.ts");
  try {
    const sinkUrl = `http://127.0.0.1:${sink.port}/rest/v0`;
    if (PAIRS > 0) {
      await capacity("simulator against a protocol sink", sinkUrl, SINK, 1, RAMP, { name: "sink", pid: sink.child.pid }, PROFILE);
      // A run longer than the windows need: it is ended after them.
      const long = validateScenario({ ...scenarioDoc(SINK, 2, RAMP), duration_s: 86_400 });
      process.stdout.write(`\nsimulator and bare loop in alternating windows (same sink):\n`);
      await sinkPairs({ SimRunner, scenario: long, baseUrl: sinkUrl, token: TOKEN, blocks: SINK, pairs: PAIRS, windowS: PAIR_SECONDS, settleS: PAIR_SETTLE });
      return;
    }
    const ratios: number[] = [];
    for (let round = 0; round < SINK_ROUNDS; round++) {
      // Every other round runs the bare loop first, so that a machine slowing down over the rounds
      // does not always favour the same side.
      const simFirst = round % 2 === 0;
      const runBare = () => bareLoop(sinkUrl, SINK, PROFILE === "" ? "" : `${PROFILE}.bare`);
      const bareBefore = simFirst ? null : await runBare();
      const sim = await capacity("simulator against a protocol sink", sinkUrl, SINK, 1, RAMP, { name: "sink", pid: sink.child.pid }, PROFILE);
      const bare = bareBefore ?? (await runBare());
      process.stdout.write(`\noverhead per event at ${SINK} blocks × 1/s (same sink${SINK_ROUNDS > 1 ? `, round ${round + 1} of ${SINK_ROUNDS}` : ""}):\n`);
      figure("  bare HTTP loop CPU", bare.cpuUsPerEvent, "µs/event");
      figure("  simulator CPU", sim.cpuUsPerEvent, "µs/event", { name: "bare loop", value: bare.cpuUsPerEvent });
      figure("  simulator overhead", sim.cpuUsPerEvent - bare.cpuUsPerEvent, "µs/event over the bare loop");
      ratios.push(sim.cpuUsPerEvent / bare.cpuUsPerEvent);
    }
    if (ratios.length > 1) {
      process.stdout.write(`\nsimulator / bare loop over ${ratios.length} rounds: ${ratios.map((r) => r.toFixed(2)).join(", ")}; median ${median(ratios).toFixed(2)} ×\n`);
    }
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
 * `blockkit sim --workers N` against the sink split over processes (or the real server), once per
 * fleet size of BENCH_SIM_FLEET and round of BENCH_SIM_ROUNDS, sizes alternating within a round.
 */
async function fleetInProcesses(): Promise<void> {
  process.stdout.write(`\n${raiseFiles(FILES)}\n`);
  const results = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const { against, blocks } of FLEETS) {
      const { workers, why } = workersFor(blocks, WORKERS);
      if (why) process.stdout.write(`\n${blocks} blocks${why}\n`);
      results.push(await fleetRun({ blocks, workers, against, scenario: (n) => scenarioDoc(n, 3 + round, RAMP), token: TOKEN }));
    }
  }
  fleetTable(results);
}

async function main(): Promise<void> {
  process.stdout.write(`machine: ${machine()}\n`);
  const only = process.env.BENCH_ONLY;
  const part = (name: string): boolean => only === undefined || only === "" || only === name;
  if (SINK > 0 && part("sink")) await againstSink();
  // BENCH_SIM_SINK=0 (the server steps alone) skips it too, unless it is the part asked for.
  if (FLEETS.length > 0 && (only === "fleet" || (SINK > 0 && part("fleet")))) await fleetInProcesses();
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
