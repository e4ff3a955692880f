/**
 * `BENCH_SCALEOUT=scrape`: what one scrape of the server's process metrics costs its event loop
 * with a fleet's connections open. BENCH_SCRAPE_CONNECTIONS (default 8,000) loopback connections
 * into this process (two sockets each: twice the descriptors and handles of a server holding that
 * many polls), then the process metrics rendered, alternated in BENCH_SCRAPE_ROUNDS rounds (default
 * 5) of 20 scrapes: prom-client's every default gauge (main before), and the server's set
 * (processMetrics in server/services/metrics.ts). Per scrape: the event loop's busy time
 * (eventLoopUtilization) and the process's CPU (thread pool included), medians.
 */
import { type Server, type Socket, connect, createServer } from "node:net";
import { Registry, collectDefaultMetrics } from "prom-client";
import { performance } from "node:perf_hooks";
import { processMetrics } from "../server/services/metrics.js";
import { figure, median } from "./lib.js";

const CONNECTIONS = Number(process.env.BENCH_SCRAPE_CONNECTIONS ?? 8000);
const ROUNDS = Number(process.env.BENCH_SCRAPE_ROUNDS ?? 5);
const SCRAPES = 20;

function registry(all: boolean): Registry {
  const r = new Registry();
  if (all) collectDefaultMetrics({ register: r, prefix: "blockkit_process_" });
  else processMetrics(r);
  return r;
}

interface Cost {
  loop: number;
  cpu: number;
}


/** Event-loop busy ms and process CPU ms per scrape (medians of the round's scrapes). */
async function scrapeCost(r: Registry): Promise<Cost> {
  const loop: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < SCRAPES; i++) {
    const e0 = performance.eventLoopUtilization();
    const c0 = process.cpuUsage();
    await r.metrics();
    const c = process.cpuUsage(c0);
    loop.push(performance.eventLoopUtilization(e0).active);
    cpu.push((c.user + c.system) / 1000);
  }
  return { loop: median(loop), cpu: median(cpu) };
}

export async function scrapePart(): Promise<void> {
  const sockets: Socket[] = [];
  const server: Server = createServer((s) => sockets.push(s));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  try {
    for (let i = 0; i < CONNECTIONS; i += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, CONNECTIONS - i) }, () => new Promise<void>((resolve, reject) => {
          const s = connect(port, "127.0.0.1", () => resolve());
          s.once("error", reject);
          sockets.push(s);
        })),
      );
    }
    process.stdout.write(`\n/metrics process gauges, ${CONNECTIONS} connections open (${sockets.length} sockets), ${ROUNDS} rounds of ${SCRAPES} scrapes alternated (per scrape: event loop busy, process CPU):\n`);
    const all = registry(true);
    const kept = registry(false);
    const a: Cost[] = [];
    const k: Cost[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const x = await scrapeCost(all);
      const y = await scrapeCost(kept);
      a.push(x);
      k.push(y);
      process.stdout.write(`  round ${round + 1}: every default gauge ${x.loop.toFixed(2)} ms, ${x.cpu.toFixed(2)} ms CPU; the server's set ${y.loop.toFixed(2)} ms, ${y.cpu.toFixed(2)} ms CPU\n`);
    }
    figure("  event loop busy per scrape, the server's set (median of rounds)", median(k.map((c) => c.loop)), "ms", { name: "every default gauge", value: median(a.map((c) => c.loop)) });
    figure("  process CPU per scrape, the server's set (median of rounds)", median(k.map((c) => c.cpu)), "ms", { name: "every default gauge", value: median(a.map((c) => c.cpu)) });
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
}
