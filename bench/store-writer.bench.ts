/**
 * `npm run bench -- store-writer`: writes on the event loop of the embedded store beside a
 * sustained ingest load (server/store/sqlite/writer.ts). One server in this process, autocannon in
 * a child process POSTing readings (24 connections, 12 s), and device renames sent one after the
 * other for 8 s of it: rename latency, the event loop's delay in the server process, and the block
 * events answered meanwhile (which a rename waiting in SQLite's busy handler used to hold up).
 * BENCH_SECONDS: the load's length (default 12; the renames run from 2 s to 2 s before its end).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import pino from "pino";
import { BlockkitServer } from "../server/controller.js";
import { figure, machine, percentile } from "./lib.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 12);
const TOKEN = "bench-admin-token-writer-0001";
const NODE = "BENCHWRITER0001";
const dir = mkdtempSync(join(tmpdir(), "bk-bench-writer-"));
const server = new BlockkitServer({ dataDir: dir, port: 0, streamPort: 0, logger: pino({ level: "silent" }), adminToken: TOKEN, rateLimitPerSecond: 0 });
try {
  const { baseUrl } = await server.start();
  const user = (p: string): string => `${baseUrl}${p}${p.includes("?") ? "&" : "?"}user_access_token=${TOKEN}`;
  const { token } = (await (await fetch(user(`/block/${NODE}/activate`))).json()) as { token: string };
  const post = { method: "POST", headers: { "x-service-token": token, "content-type": "application/json" }, body: JSON.stringify({ G: "0", V: 0, D: 9, DA: "1" }) };
  await (await fetch(`${baseUrl}/block/${NODE}/data`, post)).text();
  const cannon = join(import.meta.dirname, "..", "node_modules", ".bin", "autocannon");
  const args = ["-c", "24", "-d", String(SECONDS), "-m", "POST", "-H", `x-service-token=${token}`, "-H", "content-type=application/json", "-b", post.body, `${baseUrl}/block/${NODE}/data`];
  const load = spawn(cannon, args, { stdio: ["ignore", "ignore", "pipe"] });
  let report = "";
  load.stderr.on("data", (d: Buffer) => (report += d.toString()));
  const exited = new Promise((resolve) => load.once("exit", resolve));
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const latencies: number[] = [];
  let refused = 0;
  const began = performance.now();
  while (performance.now() - began < (SECONDS - 4) * 1000) {
    const asked = performance.now();
    const r = await fetch(user(`/device/${NODE}_0_0_9`), { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ shortName: `n${latencies.length}` }) });
    await r.text();
    if (r.status !== 200) refused++;
    latencies.push(performance.now() - asked);
  }
  loop.disable();
  await exited;
  latencies.sort((a, b) => a - b);
  process.stdout.write(`${machine()}\n`);
  figure("renames during the load", latencies.length, "");
  figure("renames refused", refused, "");
  figure("rename p50", percentile(latencies, 50), "ms");
  figure("rename p99", percentile(latencies, 99), "ms");
  figure("event loop delay p99", loop.percentile(99) / 1e6, "ms");
  figure("event loop delay max", loop.max / 1e6, "ms");
  const answered = /(\d+)k requests in/.exec(report);
  figure("block POSTs answered during the load", answered ? Number(answered[1]) * 1000 : Number.NaN, "");
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
