/**
 * `BENCH_SCALEOUT=polls`: the cross-instance command latency (PUT on A -> the poll held on B
 * answered) with BENCH_POLLS (default 10,000) polls held over two PostgreSQL instances, renewed as
 * blocks renew them, and the servers' CPU meanwhile. Apart from bench/scaleout.bench.ts, which
 * picks the parts to run.
 */
import { type ChildProcess, fork } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pgSchema } from "./fixtures/pg-schema.js";
import { cpuTimeMs as cpuMs } from "./fixtures/proc-stats.js";
import { type Proc, startServer } from "./fixtures/procs.js";
import { figure, percentile } from "./lib.js";
import { ADMIN, blocksInStore, held, json, nodeId, untilHeld } from "./scaleout-servers.js";

const POLLS = Number(process.env.BENCH_POLLS ?? 10_000);
const POLL_SAMPLES = Number(process.env.BENCH_POLL_SAMPLES ?? 300);
const HOLD_S = 30;

/** 10,000 polls held over two instances (half each, renewed as blocks do), PUT on A -> poll on B. */
export async function pollsPart(dir: string): Promise<void> {
  const db = pgSchema("polls");
  const procs: Proc[] = [];
  const clients: ChildProcess[] = [];
  try {
    const hold = ["--db", db.url, "--poll-hold", String(HOLD_S)];
    const a = await startServer(join(dir, "pa"), ADMIN, hold);
    procs.push(a);
    const b = await startServer(join(dir, "pb"), ADMIN, hold);
    procs.push(b);
    const pairs = await blocksInStore(db.url, POLLS + POLL_SAMPLES, nodeId);
    const sample = pairs.slice(POLLS);
    // The sampled blocks' actuator exists before its commands.
    for (const [node, token] of sample) {
      await json(`http://127.0.0.1:${a.port}/rest/v0/block/${node}/data`, { method: "POST", headers: { "x-service-token": token }, body: JSON.stringify({ G: "0", V: 0, D: 1002, DA: "0" }) });
    }
    // Half the polls on each instance, from two client processes per instance (a few thousand
    // sockets each), the first polls spread over one hold so that renewals are spread as a fleet's.
    const half = POLLS / 2;
    const perClient = Math.ceil(half / 2);
    for (const [s, server] of [a, b].entries()) {
      for (let c = 0; c < 2; c++) {
        const file = join(dir, `polls-${s}-${c}.json`);
        writeFileSync(file, JSON.stringify(pairs.slice(s * half + c * perClient, Math.min((s + 1) * half, s * half + (c + 1) * perClient))));
        clients.push(fork(join(import.meta.dirname, "fixtures", "poll-client.ts"), [String(server.port), file, String(HOLD_S * 1000)], { execArgv: ["--import", "tsx"] }));
      }
    }
    const t0 = Date.now();
    await Promise.all([untilHeld(a.port, half, (HOLD_S + 60) * 1000), untilHeld(b.port, half, (HOLD_S + 60) * 1000)]);
    process.stdout.write(`${POLLS} polls held over two instances after ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
    const sampleFile = join(dir, "sample.json");
    writeFileSync(sampleFile, JSON.stringify(sample));
    // Spread over a little more than one hold: the sample meets the renewals of every poll.
    const gap = Math.ceil((HOLD_S * 1100) / POLL_SAMPLES);
    const cpu0 = { a: cpuMs(a.child.pid), b: cpuMs(b.child.pid), at: performance.now() };
    const lat = await new Promise<number[]>((resolve, reject) => {
      const sampler = fork(join(import.meta.dirname, "fixtures", "command-sampler.ts"), [String(b.port), ADMIN, sampleFile, String(half), String(a.port), String(gap)], {
        execArgv: ["--import", "tsx"],
        stdio: ["ignore", "pipe", "inherit", "ipc"],
      });
      let out = "";
      sampler.stdout?.on("data", (d: Buffer) => (out += d.toString()));
      sampler.once("exit", (code) => (code === 0 ? resolve(JSON.parse(out) as number[]) : reject(new Error(`command sampler exited with ${code}`))));
    });
    const wall = performance.now() - cpu0.at;
    const heldAfter = (await held(a.port)) + (await held(b.port));
    lat.sort((x, y) => x - y);
    process.stdout.write(`\ncross-instance command latency, ${POLLS} polls held over two PostgreSQL instances (hold ${HOLD_S} s, renewed), ${lat.length} samples over ${(wall / 1000).toFixed(0)} s:\n`);
    figure("  polls held at the end", heldAfter, `(of ${POLLS + 1})`);
    figure("  command PUT on A -> poll on B answered, p50", percentile(lat, 50), "ms");
    figure("  command PUT on A -> poll on B answered, p99", percentile(lat, 99), "ms (target < 30)");
    figure("  command PUT on A -> poll on B answered, max", lat[lat.length - 1] ?? Number.NaN, "ms");
    figure("  server A CPU", (100 * (cpuMs(a.child.pid) - cpu0.a)) / wall, "% of one core");
    figure("  server B CPU", (100 * (cpuMs(b.child.pid) - cpu0.b)) / wall, "% of one core");
  } finally {
    for (const c of clients) c.kill();
    for (const proc of procs) await proc.stop().catch(() => undefined);
    await db.drop();
  }
}
