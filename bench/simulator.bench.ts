/**
 * Simulator capacity and overhead (`npm run bench simulator`).
 *
 * The server runs in its own process, so the CPU measured here is the simulator's alone.
 * 1. Capacity: fleets of growing size (default 1 000 then 10 000 blocks, one reading per second
 *    each, no commands or callbacks) run through SimRunner; for each, the acknowledged rate against
 *    the offered one, the simulator's CPU (percent of one core) and event-loop delay, the ingest
 *    latency and who limited the run.
 * 2. Overhead: CPU microseconds per acknowledged event of the simulator (real BlockAgents, outbox,
 *    long-polls, metrics) against a bare loop that only POSTs the same /data requests with the same
 *    tokens and the same undici pool, at the same offered rate.
 *
 * Env: BENCH_SIM_STEPS (block counts, comma-separated), BENCH_SIM_SECONDS (measured seconds per
 * step, default 6), BENCH_SIM_BARE (blocks of the overhead comparison, default 1000).
 * Activating 10 000 blocks takes the server a while (one durable claim and token each).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { ApiClient } from "../protocol/api-client.js";
import { validateScenario } from "../simulator/scenario/parse.js";
import { startServer } from "./fixtures/procs.js";
import { figure, machine } from "./lib.js";

// The built simulator (bench/run.ts builds first), as it runs in production.
const RUNNER = "../dist/simulator/runner.js";
const { SimRunner } = (await import(RUNNER)) as typeof import("../simulator/runner.js");
const TOKEN = "bench-admin-token-0123456789";
const STEPS = (process.env.BENCH_SIM_STEPS ?? "1000,10000").split(",").map(Number);
const SECONDS = Number(process.env.BENCH_SIM_SECONDS ?? 6);
const BARE = Number(process.env.BENCH_SIM_BARE ?? 1000);

function scenario(blocks: number, seed: number) {
  return validateScenario({
    name: `capacity-${blocks}`,
    seed,
    blocks: { count: blocks, node_id: "BENCH{seed}N{index:8}" },
    devices: [{ type: "temperature", rate: 1 }],
    ramp_up: { blocks_per_s: 800 },
    warmup_s: 3,
    duration_s: SECONDS,
    commands: { rate: 0 },
    callbacks: { devices: 0 },
  });
}

async function capacity(baseUrl: string, blocks: number, seed: number): Promise<{ cpuUsPerEvent: number }> {
  const runner = new SimRunner({ scenario: scenario(blocks, seed), baseUrl, token: TOKEN, drainTimeoutMs: 10_000 });
  await runner.start();
  const report = await runner.finished;
  await runner.stop();
  const c = report.counts;
  process.stdout.write(`\n${blocks} blocks × 1 reading/s (measured ${report.duration_s} s):\n`);
  figure("  blocks activated", report.blocks.activated, `of ${blocks}`);
  figure("  acknowledged", report.events_per_s, "events/s", { name: "offered", value: blocks });
  figure("  simulator CPU", report.simulator.cpu_percent, "% of one core");
  figure("  simulator event-loop delay p99", report.simulator.loop_delay_p99_ms, "ms");
  figure("  ingest ack p50", report.latency_ms.ingest.p50 ?? Number.NaN, "ms");
  figure("  ingest ack p99", report.latency_ms.ingest.p99 ?? Number.NaN, "ms");
  figure("  errors", c.errors, Object.keys(report.errors_by_kind).join(", ") || "");
  process.stdout.write(`  limited by: ${report.simulator.bottleneck} (${report.simulator.reason})\n`);
  return { cpuUsPerEvent: report.simulator.cpu_us_per_event ?? Number.NaN };
}

/** The baseline: pre-activated tokens, one timer per block, bare POST /data. */
async function bareLoop(baseUrl: string, blocks: number): Promise<number> {
  const api = new ApiClient({ baseUrl, token: TOKEN });
  const nodes = Array.from({ length: blocks }, (_v, i) => `BARE${String(i).padStart(8, "0")}`);
  const tokens: string[] = [];
  for (let i = 0; i < nodes.length; i += 200) tokens.push(...(await Promise.all(nodes.slice(i, i + 200).map((n) => api.activateDirect(n)))));
  const dispatcher = new Agent({ keepAliveTimeout: 60_000, connections: null, pipelining: 1 });
  let acked = 0;
  let running = true;
  const timers: NodeJS.Timeout[] = [];
  const send = (i: number): void => {
    const body = JSON.stringify({ G: "1", V: 0, D: 9, DA: (20 + Math.random()).toFixed(1), TIMESTAMP: Date.now(), KEY: `${i}-${Date.now()}-${Math.random()}` });
    request(`${baseUrl}/block/${nodes[i]}/data`, {
      method: "POST",
      dispatcher,
      headers: { "x-service-token": tokens[i] as string, "content-type": "application/json" },
      body,
    }).then(
      async (res) => {
        await res.body.text();
        if (res.statusCode === 200 && running) acked++;
      },
      () => undefined,
    );
  };
  nodes.forEach((_n, i) => {
    timers.push(
      setTimeout(() => {
        send(i);
        timers.push(setInterval(() => send(i), 1000));
      }, Math.random() * 1000),
    );
  });
  await new Promise((r) => setTimeout(r, 3000));
  const cpu0 = process.cpuUsage();
  const acked0 = acked;
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  const cpu = process.cpuUsage(cpu0);
  const n = acked - acked0;
  running = false;
  for (const t of timers) clearInterval(t);
  await dispatcher.close();
  process.stdout.write(`\nbare loop, ${blocks} blocks × 1 POST/s:\n`);
  figure("  acknowledged", n / SECONDS, "events/s");
  return (cpu.user + cpu.system) / n;
}

async function main(): Promise<void> {
  process.stdout.write(`machine: ${machine()}\n`);
  const dir = mkdtempSync(join(tmpdir(), "blockkit-bench-sim-"));
  const server = await startServer(dir, TOKEN);
  const baseUrl = `http://127.0.0.1:${server.port}/rest/v0`;
  try {
    let overheadSim = Number.NaN;
    for (const [i, blocks] of STEPS.entries()) {
      const r = await capacity(baseUrl, blocks, 100 + i);
      if (blocks === BARE) overheadSim = r.cpuUsPerEvent;
    }
    if (Number.isNaN(overheadSim)) overheadSim = (await capacity(baseUrl, BARE, 99)).cpuUsPerEvent;
    const bare = await bareLoop(baseUrl, BARE);
    process.stdout.write(`\noverhead per event at ${BARE} blocks × 1/s:\n`);
    figure("  bare HTTP loop CPU", bare, "µs/event");
    figure("  simulator CPU", overheadSim, "µs/event", { name: "bare loop", value: bare });
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
