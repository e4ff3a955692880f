/**
 * Automation benchmarks: rules, callbacks and their cost on ingest.
 * 1. Ingest with 1,000 active rules (one per device, over 1,000 devices) and 100 callbacks to a
 *    local receiver, against the same load on a server without them, in this run: autocannon on
 *    loopback against POST /block/:nodeId/data (bench/automation-load.ts), SECONDS per
 *    configuration in alternating slices.
 * 2. Rule latency: from a data event (committed) to the resulting command on the block's
 *    long-poll; and end to end from sending the event, which adds the event's own disk sync.
 * Environment: BENCH_SECONDS (default 10) per configuration, BENCH_CONNECTIONS (default 32),
 * BENCH_ONLY=ingest|latency, BENCH_NO_RULES / BENCH_NO_CALLBACKS (to see each part's cost).
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import pino from "pino";
import { request } from "undici";
import { BlockkitServer } from "../server/controller.js";
import { startReceiver } from "./fixtures/receiver.js";
import { figure, machine, percentile } from "./lib.js";

const here = dirname(fileURLToPath(import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
/** Each configuration's SECONDS are split into this many alternating runs. */
const ROUNDS = 10;
const DEVICES = 1000;
const NODE = "BENCHAUTO001";
const TOKEN = "bench-admin-token-0123456789";

interface Live {
  server: BlockkitServer;
  base: string;
  blockToken: string;
  dir: string;
}

async function call(method: "GET" | "POST" | "PUT", url: string, json?: unknown, headers: Record<string, string> = {}): Promise<unknown> {
  const res = await request(url, {
    method,
    headers: json === undefined ? headers : { ...headers, "content-type": "application/json" },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${method} ${url.split("?")[0]} -> ${res.statusCode} ${text}`);
  return JSON.parse(text) as unknown;
}

async function startServer(): Promise<Live> {
  const dir = mkdtempSync(join(tmpdir(), "blockkit-bench-auto-"));
  const server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: dir, logger: pino({ level: "silent" }), adminToken: TOKEN, rateLimitPerSecond: 0 });
  const { baseUrl } = await server.start();
  const { token } = (await call("GET", `${baseUrl}/block/${NODE}/activate?user_access_token=${TOKEN}`)) as { token: string };
  // The devices exist before the load starts: one temperature sensor per port, and a relay.
  for (let g = 0; g < DEVICES; g++) await call("POST", `${baseUrl}/block/${NODE}/data`, { G: String(g), V: 0, D: 9, DA: "20" }, { "x-service-token": token });
  await call("POST", `${baseUrl}/block/${NODE}/data`, { G: "0", V: 0, D: 1002, DA: "0" }, { "x-service-token": token });
  return { server, base: baseUrl, blockToken: token, dir };
}

async function stopServer(live: Live): Promise<void> {
  await live.server.stop();
  rmSync(live.dir, { recursive: true, force: true });
}

interface LoadResult {
  rps: number;
  total: number;
  non2xx: number;
  errors: number;
}

/** The load generator process (bench/automation-load.ts): one job per line, one answer per line. */
class LoadGenerator {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly answers: ((line: string) => void)[] = [];
  private buffer = "";

  constructor() {
    this.child = spawn(process.execPath, ["--import", "tsx", join(here, "automation-load.ts")], { stdio: "pipe" });
    this.child.stderr.pipe(process.stderr);
    this.child.stdout.on("data", (c: Buffer) => {
      this.buffer += c.toString();
      let nl: number;
      while ((nl = this.buffer.indexOf("\n")) >= 0) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        this.answers.shift()?.(line);
      }
    });
  }

  run(live: Live, seconds: number): Promise<LoadResult> {
    return new Promise((resolve) => {
      this.answers.push((line) => resolve(JSON.parse(line) as LoadResult));
      this.child.stdin.write(`${live.base}/block/${NODE}/data ${live.blockToken} ${DEVICES} ${seconds} ${CONNECTIONS}\n`);
    });
  }

  close(): void {
    this.child.stdin.end();
  }
}

async function addAutomation(live: Live, receiverUrl: string): Promise<void> {
  const relay = `${NODE}_0_0_1002`;
  for (let g = 0; g < (process.env.BENCH_NO_RULES ? 0 : DEVICES); g++) {
    // Active rules on every device; values of the load (0..39) never enter the range, so they are evaluated, not fired.
    await call("POST", `${live.base}/rule?user_access_token=${TOKEN}`, {
      shortName: `rule ${g}`,
      preconditions: [{ handler: "serviceRangeToggle", params: { guid: `${NODE}_${g}_0_9`, between: 1000, and: 2000 } }],
      actions: [{ handler: "serviceSendCommand", params: { guid: relay, da: "1" } }],
    });
  }
  for (let g = 0; g < (process.env.BENCH_NO_CALLBACKS ? 0 : DEVICES); g += DEVICES / 100) {
    await call("POST", `${live.base}/device/${NODE}_${g}_0_9/callback?user_access_token=${TOKEN}`, { url: receiverUrl });
  }
}

async function ingest(): Promise<void> {
  // Both servers live side by side and take turns under the same load (short alternating runs),
  // so that drift in the machine's other load hits both figures alike.
  const receiver = await startReceiver();
  const plain = await startServer();
  const auto = await startServer();
  await addAutomation(auto, receiver.url);
  const gen = new LoadGenerator();
  await gen.run(plain, 1);
  await gen.run(auto, 1);
  const before = await receiver.count();
  const sum = { plain: 0, auto: 0, bad: 0 };
  const cpu = { plain: 0, auto: 0 };
  const slice = SECONDS / ROUNDS;
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, live] of r % 2 === 0 ? ([["plain", plain], ["auto", auto]] as const) : ([["auto", auto], ["plain", plain]] as const)) {
      const c0 = process.cpuUsage();
      const res = await gen.run(live, slice);
      const c1 = process.cpuUsage(c0);
      cpu[name] += c1.user + c1.system;
      sum[name] += res.total;
      sum.bad += res.non2xx + res.errors;
    }
  }
  gen.close();
  const delivered = (await receiver.count()) - before;
  const stats = auto.server.services.automation.callbacks.stats;
  const perBatch = (l: Live): number => l.server.services.ingest.stats.events / l.server.services.ingest.stats.batches;
  figure("events per group commit (without / with automation)", perBatch(plain), "", { name: "with", value: perBatch(auto) });
  await stopServer(plain);
  await stopServer(auto);
  receiver.close();

  const baseline = sum.plain / SECONDS;
  figure("ingest without automation", Math.round(baseline), "events/s");
  figure("ingest with 1000 rules + 100 callbacks", Math.round(sum.auto / SECONDS), "events/s", { name: "without", value: baseline });
  figure("server CPU per event without automation", cpu.plain / sum.plain, "µs");
  figure("server CPU per event with automation", cpu.auto / sum.auto, "µs", { name: "without", value: cpu.plain / sum.plain });
  figure("callback deliveries during the runs", delivered, "POSTs");
  figure("callback deliveries dropped (queue bound)", stats.dropped, "");
  figure("non-2xx answers or errors", sum.bad, "");
}

/** The disk's durable-write time (one SQLite commit with synchronous=FULL), for context. */
function diskSync(dir: string): number[] {
  const db = new Database(join(dir, "fsync.db"));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec("CREATE TABLE t (a INTEGER)");
  const insert = db.prepare("INSERT INTO t VALUES (?)");
  const out: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t0 = performance.now();
    insert.run(i);
    out.push(performance.now() - t0);
  }
  db.close();
  return out.sort((a, b) => a - b);
}

async function latency(): Promise<void> {
  const live = await startServer();
  const button = `${NODE}_0_0_5`;
  await call("POST", `${live.base}/block/${NODE}/data`, { G: "0", V: 0, D: 5, DA: "0" }, { "x-service-token": live.blockToken });
  await call("POST", `${live.base}/rule?user_access_token=${TOKEN}`, {
    shortName: "latency",
    preconditions: [{ handler: "serviceChange", params: { guid: button, to: "1" } }],
    actions: [{ handler: "serviceSendCommand", params: { guid: `${NODE}_0_0_1002`, da: "1" } }],
  });
  // When the data event is committed (the moment it exists for rules), heard like the engine hears it.
  let committedAt = 0;
  live.server.services.ingest.onCommitted((events) => {
    if (events.some((e) => e.guid === button)) committedAt = performance.now();
  });
  // When the long-poll response carrying the command has been written (its "finish"): the
  // server's side of "the command on the long-poll", without this process's client in the way.
  let writtenAt = 0;
  const hub = live.server.services.commands;
  const delivered = hub.delivered.bind(hub);
  hub.delivered = (rows) => {
    writtenAt = performance.now();
    return delivered(rows);
  };
  const fromCommit: number[] = [];
  const fromSend: number[] = [];
  const headers = { "x-service-token": live.blockToken };
  for (let i = 0; i < 320; i++) {
    const poll = call("GET", `${live.base}/block/${NODE}/commands`, undefined, headers) as Promise<{ DEVICE: unknown[] }>;
    await new Promise((resolve) => setTimeout(resolve, 2));
    const t0 = performance.now();
    await call("POST", `${live.base}/block/${NODE}/data`, { G: "0", V: 0, D: 5, DA: "1" }, headers);
    const got = await poll;
    const t1 = performance.now();
    if (got.DEVICE.length === 0) throw new Error("the long-poll ended without the command");
    if (i < 20) continue;
    fromCommit.push(writtenAt - committedAt);
    fromSend.push(t1 - t0);
  }
  const disk = diskSync(live.dir);
  await stopServer(live);
  fromCommit.sort((a, b) => a - b);
  fromSend.sort((a, b) => a - b);
  figure("rule latency p50 (data event committed -> long-poll response with the command written)", percentile(fromCommit, 50), "ms");
  figure("rule latency p99", percentile(fromCommit, 99), "ms");
  figure("end to end p50 (data POST sent -> command read by a client in this process)", percentile(fromSend, 50), "ms");
  figure("end to end p99", percentile(fromSend, 99), "ms");
  figure("disk: one durable SQLite commit p50", percentile(disk, 50), "ms");
  figure("disk: one durable SQLite commit p99", percentile(disk, 99), "ms");
}

process.stdout.write(`machine: ${machine()}; ${SECONDS} s per ingest run, ${CONNECTIONS} connections\n`);
// BENCH_ONLY=ingest|latency runs one part.
if (process.env.BENCH_ONLY !== "latency") await ingest();
if (process.env.BENCH_ONLY !== "ingest") await latency();
