/**
 * `npm run bench -- scaleout`, in parts (BENCH_SCALEOUT, comma-separated; default "ingest,polls"):
 *  - ingest: ingest on PostgreSQL against ingest on SQLite in the same run (64 blocks, 64
 *    connections), one PostgreSQL instance against two on the same database (the load split over
 *    both), and the cross-instance command latency with one poll held;
 *  - polls: the cross-instance command latency (PUT on A -> the poll held on B answered) with
 *    BENCH_POLLS (default 10,000) polls held over two instances, renewed as blocks renew them;
 *  - wal: WAL pages one SQLite ingest commit writes (keys, block touches), in this process;
 *  - fleet: `blockkit sim` with N blocks × 1 reading/s against one SQLite server, two and three
 *    instances on PostgreSQL (BENCH_FLEET, e.g. "sqlite:20000,pg2:10000,pg3:10000"): acknowledged
 *    against offered, ack p50/p99, the CPU of every process (simulator processes, each server,
 *    PostgreSQL) and the servers' commit times over the measured window.
 * Needs the PostgreSQL of the tests (BLOCKKIT_TEST_PG / DATABASE_URL / 127.0.0.1:5432 db test);
 * each run uses a schema of its own, dropped afterwards.
 */
import { type ChildProcess, fork, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import { type Proc, startServer } from "./fixtures/procs.js";
import { figure, machine, percentile } from "./lib.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const LATENCY_SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const ADMIN = "bench-admin-token-scaleout-01";
const PG_URL = process.env.BLOCKKIT_TEST_PG ?? process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const nodeId = (i: number): string => `SCALE${String(i).padStart(8, "0")}`;
const PARTS = (process.env.BENCH_SCALEOUT ?? "ingest,polls").split(",");
const POLLS = Number(process.env.BENCH_POLLS ?? 10_000);
const POLL_SAMPLES = Number(process.env.BENCH_POLL_SAMPLES ?? 300);
const HOLD_S = 30;
const FLEET = (process.env.BENCH_FLEET ?? "sqlite:10000,pg2:10000").split(",").filter(Boolean);
const FLEET_SECONDS = Number(process.env.BENCH_FLEET_SECONDS ?? 15);
const root = join(import.meta.dirname, "..");

async function json(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<unknown> {
  const res = await fetch(url, { ...init, headers: { "content-type": "application/json", ...init.headers } });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? "GET"} ${url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

function load(ports: number[], nodes: string[], tokens: string[], seconds: number): Promise<autocannon.Result[]> {
  const body = JSON.stringify({ G: "0", V: 0, D: 9, DA: "21.5" });
  const per = 64 / ports.length;
  return Promise.all(
    ports.map((port, p) => {
      let next = 0;
      return autocannon({
        url: `http://127.0.0.1:${port}`,
        connections: per,
        duration: seconds,
        setupClient: (client: autocannon.Client) => {
          const i = (p * per + next++) % nodes.length;
          client.setRequests([
            { method: "POST", path: `/rest/v0/block/${nodes[i]}/data`, headers: { "content-type": "application/json", "x-service-token": tokens[i] as string }, body } as autocannon.Request,
          ]);
        },
      });
    }),
  );
}

async function activate(port: number, n: number): Promise<{ nodes: string[]; tokens: string[] }> {
  const nodes = Array.from({ length: n }, (_, i) => nodeId(i));
  const tokens: string[] = [];
  for (const node of nodes) tokens.push(((await json(`http://127.0.0.1:${port}/rest/v0/block/${node}/activate?user_access_token=${ADMIN}`)) as { token: string }).token);
  return { nodes, tokens };
}

async function rps(servers: Proc[], nodes: string[], tokens: string[]): Promise<{ rps: number; errors: number }> {
  await load(servers.map((s) => s.port), nodes, tokens, 2); // warm-up
  const results = await load(servers.map((s) => s.port), nodes, tokens, SECONDS);
  return {
    rps: results.reduce((a, r) => a + r.requests.average, 0),
    errors: results.reduce((a, r) => a + r.errors + r.timeouts + r.non2xx, 0),
  };
}

/** A schema of its own on the tests' PostgreSQL, dropped by `drop()`. */
function pgSchema(tag: string): { url: string; schema: string; drop: () => Promise<void> } {
  const schema = `bk_bench_${tag}_${process.pid}`;
  const u = new URL(PG_URL);
  u.searchParams.set("schema", schema);
  return {
    url: u.toString(),
    schema,
    async drop() {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    },
  };
}

async function ingestPart(dir: string): Promise<void> {
  const db = pgSchema("ingest");
  const procs: Proc[] = [];
  try {
    // SQLite, one instance.
    const lite = await startServer(join(dir, "sqlite"), ADMIN);
    procs.push(lite);
    const l = await activate(lite.port, 64);
    const sqlite = await rps([lite], l.nodes, l.tokens);
    await lite.stop();
    // PostgreSQL, one instance, then two.
    const a = await startServer(join(dir, "a"), ADMIN, ["--db", db.url, "--poll-hold", "30"]);
    procs.push(a);
    const b = await startServer(join(dir, "b"), ADMIN, ["--db", db.url, "--poll-hold", "30"]);
    procs.push(b);
    const p = await activate(a.port, 64);
    const one = await rps([a], p.nodes, p.tokens);
    const two = await rps([a, b], p.nodes, p.tokens);
    figure("ingest SQLite, 1 instance (64 blocks, 64 connections)", sqlite.rps, "req/s");
    figure("ingest PostgreSQL, 1 instance", one.rps, "req/s", { name: "SQLite", value: sqlite.rps });
    figure("ingest PostgreSQL, 2 instances (32 connections each)", two.rps, "req/s", { name: "1 instance", value: one.rps });
    figure("ingest errors (all runs)", sqlite.errors + one.errors + two.errors, "");
    // Cross-instance command latency: the poll held on B, the PUT on A, until B answers.
    const node = p.nodes[0] as string;
    const token = p.tokens[0] as string;
    const guid = `${node}_0_0_1002`;
    await json(`http://127.0.0.1:${a.port}/rest/v0/block/${node}/data`, { method: "POST", headers: { "x-service-token": token }, body: JSON.stringify({ G: "0", V: 0, D: 1002, DA: "0" }) });
    const samples: number[] = [];
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      const polled = json(`http://127.0.0.1:${b.port}/rest/v0/block/${node}/commands`, { headers: { "x-service-token": token } });
      // Held once B's health says so (bounded).
      for (let k = 0; k < 1000; k++) {
        const h = (await json(`http://127.0.0.1:${b.port}/healthz`)) as { heldPolls: number };
        if (h.heldPolls >= 1) break;
      }
      const t0 = performance.now();
      await json(`http://127.0.0.1:${a.port}/rest/v0/device/${guid}?user_access_token=${ADMIN}`, { method: "PUT", body: JSON.stringify({ DA: String(i % 2) }) });
      await polled;
      samples.push(performance.now() - t0);
    }
    samples.sort((x, y) => x - y);
    figure("command PUT on A -> poll on B answered (1 poll held), p50", percentile(samples, 50), "ms");
    figure("command PUT on A -> poll on B answered (1 poll held), p99", percentile(samples, 99), "ms");
  } finally {
    for (const proc of procs) await proc.stop().catch(() => undefined);
    await db.drop();
  }
}

/** Blocks claimed and their tokens made through the store itself (10,000 activations over HTTP take minutes). */
async function blocksInStore(dbUrl: string, n: number, name: (i: number) => string): Promise<[string, string][]> {
  const { openStore } = await import("../server/store/index.js");
  const { AuthService } = await import("../server/services/auth.js");
  const store = await openStore(dbUrl);
  try {
    const auth = new AuthService(store);
    const { userId } = await auth.user({ user_access_token: ADMIN });
    const now = Date.now();
    const pairs: [string, string][] = [];
    for (let i = 0; i < n; i += 200) {
      const chunk = Array.from({ length: Math.min(200, n - i) }, (_, k) => name(i + k));
      pairs.push(
        ...(await Promise.all(
          chunk.map(async (node): Promise<[string, string]> => {
            await store.blocks.claim(node, userId, now, null);
            return [node, await auth.issue(userId, "block", { nodeId: node })];
          }),
        )),
      );
    }
    return pairs;
  } finally {
    await store.close();
  }
}

async function held(port: number): Promise<number> {
  return ((await json(`http://127.0.0.1:${port}/healthz`)) as { heldPolls: number }).heldPolls;
}

/** Waits until the server at `port` holds n polls (bounded). */
async function untilHeld(port: number, n: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const h = await held(port);
    if (h >= n) return;
    if (Date.now() > deadline) throw new Error(`only ${h} of ${n} polls held on :${port}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** CPU time of a process so far, ms (Linux /proc; NaN when it is gone). */
function cpuMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

/** 10,000 polls held over two instances (half each, renewed as blocks do), PUT on A -> poll on B. */
async function pollsPart(dir: string): Promise<void> {
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

/** Every descendant of a process (Linux /proc): the simulator's worker processes. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]?.split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

/** PostgreSQL's processes (every backend, the WAL writer, the checkpointer): comm "postgres". */
function postgresPids(): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/comm`, "utf8").trim() === "postgres";
      } catch {
        return false;
      }
    })
    .map(Number);
}

/**
 * Per thread of a process (Linux /proc/PID/task/TID/schedstat): ms on a CPU and ms runnable but
 * waiting for one; `ingest`: the SQLite ingest thread (the one that lowered its priority).
 */
function threads(pid: number): { main: [number, number]; ingest: [number, number] | null; others: [number, number] } {
  const out = { main: [0, 0] as [number, number], ingest: null as [number, number] | null, others: [0, 0] as [number, number] };
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const [run = 0, wait = 0] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ").map((v) => Number(v) / 1e6);
      const nice = Number(readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8").split(") ")[1]?.split(" ")[16]);
      if (Number(tid) === pid) out.main = [run, wait];
      else if (nice > 0) out.ingest = [run, wait];
      else out.others = [out.others[0] + run, out.others[1] + wait];
    }
  } catch {
    // gone
  }
  return out;
}

interface Commits {
  sum: number;
  count: number;
  events: number;
  buckets: Map<string, number>;
}

/** The server's commit histogram; empty figures when it cannot be read (a server at its connection cap refuses). */
async function commits(port: number): Promise<Commits> {
  const text = await fetch(`http://127.0.0.1:${port}/metrics`).then(
    (r) => r.text(),
    () => "",
  );
  const num = (re: RegExp): number => Number(re.exec(text)?.[1] ?? Number.NaN);
  const buckets = new Map<string, number>();
  for (const m of text.matchAll(/^blockkit_ingest_commit_seconds_bucket\{le="([^"]+)"\} (\S+)$/gm)) buckets.set(m[1] as string, Number(m[2]));
  return {
    sum: num(/^blockkit_ingest_commit_seconds_sum (\S+)$/m),
    count: num(/^blockkit_ingest_commit_seconds_count (\S+)$/m),
    events: num(/^blockkit_ingest_events_total (\S+)$/m),
    buckets,
  };
}

/** Mean commit ms, events per commit and the bucket bound under which 90 % of the window's commits fell. */
function commitFigures(a: Commits, b: Commits): { meanMs: number; perBatch: number; p90: string } {
  const n = b.count - a.count;
  let p90 = "?";
  for (const [le, v] of b.buckets) {
    if (v - (a.buckets.get(le) ?? 0) >= 0.9 * n) {
      p90 = le === "+Inf" ? "> 2.5 s" : `≤ ${Number(le) * 1000} ms`;
      break;
    }
  }
  return { meanMs: (1000 * (b.sum - a.sum)) / n, perBatch: (b.events - a.events) / n, p90 };
}

/**
 * `blockkit sim` (the built CLI, its own processes: --workers) with N blocks × 1 reading/s against
 * one SQLite server ("sqlite:N") or K instances on one PostgreSQL schema ("pgK:N"; blocks round
 * robin over them). CPU of every process over the measured window, which the simulator's
 * progress lines mark.
 */
async function fleetPart(dir: string, spec: string): Promise<void> {
  const [kind = "", count = "", workersArg] = spec.split(":");
  const blocks = Number(count);
  const workers = Number(workersArg ?? process.env.BENCH_FLEET_WORKERS ?? 2);
  const instances = kind === "sqlite" ? 1 : Number(/^pg(\d+)$/.exec(kind)?.[1]);
  if (!(blocks > 0) || !(instances > 0)) throw new Error(`BENCH_FLEET: "${spec}" is not sqlite:N or pgK:N[:workers]`);
  const db = kind === "sqlite" ? null : pgSchema(`fleet${instances}`);
  const servers: Proc[] = [];
  let sim: ChildProcess | undefined;
  try {
    for (let i = 0; i < instances; i++) {
      servers.push(await startServer(join(dir, `fleet-${kind}-${i}`), ADMIN, db ? ["--db", db.url] : []));
    }
    const scenarioFile = join(dir, `fleet-${spec.replaceAll(":", "-")}.json`);
    const reportFile = `${scenarioFile}.report.json`;
    writeFileSync(
      scenarioFile,
      JSON.stringify({
        name: `fleet-${spec}`,
        seed: 7,
        blocks: { count: blocks, node_id: "FLEET{seed}N{index:8}" },
        devices: [{ type: "temperature", rate: 1 }],
        ramp_up: { blocks_per_s: 2000, max_pending: 500 },
        warmup_s: Math.max(5, Math.round(blocks / 1000)),
        duration_s: FLEET_SECONDS,
        commands: { rate: 0 },
        callbacks: { devices: 0 },
      }),
    );
    const args = ["dist/cli/index.js", "sim", "--token", ADMIN, "--scenario", scenarioFile, "--headless", "--progress", "1", "--report", reportFile, "--workers", String(workers), "--drain", "5"];
    for (const s of servers) args.push("--server", `http://127.0.0.1:${s.port}`);
    const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "ignore", "pipe"] });
    sim = child;
    const serverPids = servers.map((s) => s.child.pid as number);
    type Snap = { at: number; sim: Map<number, number>; servers: number[]; threads: ReturnType<typeof threads>[]; pg: number; commits: Commits[] };
    const snap = async (): Promise<Snap> => {
      const at = performance.now();
      const simCpu = new Map<number, number>();
      for (const pid of [child.pid as number, ...descendants(child.pid as number)]) simCpu.set(pid, cpuMs(pid));
      return {
        at,
        sim: simCpu,
        servers: serverPids.map(cpuMs),
        threads: serverPids.map(threads),
        pg: postgresPids().reduce((t, pid) => t + (cpuMs(pid) || 0), 0),
        commits: await Promise.all(servers.map((s) => commits(s.port))),
      };
    };
    let from: Promise<Snap> | null = null;
    let to: Promise<Snap> | null = null;
    let ended = false;
    let last = "";
    child.stderr?.setEncoding("utf8");
    let buf = "";
    child.stderr?.on("data", (d: string) => {
      buf += d;
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.startsWith("[")) {
          if (/error|warn/i.test(line)) process.stderr.write(`  sim: ${line}\n`);
          continue;
        }
        last = line;
        const running = /^\[\d/.test(line);
        // The window's end: the first line after it, or (a run that drains at once and exits) its last line.
        if (running && from === null) from = snap();
        else if (running && !ended) to = snap();
        else if (!running && from !== null && !ended) {
          ended = true;
          to = snap();
        }
      }
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
    sim = undefined;
    if (from === null || to === null) throw new Error(`the simulator (exit ${code}) never reached its measured window: ${last}`);
    const f = await (from as Promise<Snap>);
    const t = await (to as Promise<Snap>);
    const wall = t.at - f.at;
    const pct = (a: number, b: number): number => (100 * (b - a)) / wall;
    const report = JSON.parse(readFileSync(reportFile, "utf8")) as {
      duration_s: number;
      events_per_s: number;
      blocks: { activated: number };
      counts: { errors: number };
      errors_by_kind: Record<string, number>;
      latency_ms: { ingest: { p50: number | null; p99: number | null } };
      simulator: { bottleneck: string; reason: string };
    };
    process.stdout.write(`\nfleet: ${blocks} blocks × 1 reading/s, simulator --workers ${workers}, against ${kind === "sqlite" ? "one SQLite server" : `${instances} instances on PostgreSQL`} (measured ${report.duration_s} s):\n`);
    figure("  blocks activated", report.blocks.activated, `of ${blocks}`);
    figure("  acknowledged", report.events_per_s, "events/s", { name: "offered", value: blocks });
    figure("  ingest ack p50", report.latency_ms.ingest.p50 ?? Number.NaN, "ms");
    figure("  ingest ack p99", report.latency_ms.ingest.p99 ?? Number.NaN, "ms");
    figure("  errors", report.counts.errors, Object.entries(report.errors_by_kind).map(([k, v]) => `${k} ${v}`).join(", "));
    const simPids = [...f.sim.keys()].filter((pid) => t.sim.has(pid) && !Number.isNaN(t.sim.get(pid) as number));
    const simTotal = simPids.reduce((s, pid) => s + pct(f.sim.get(pid) as number, t.sim.get(pid) as number), 0);
    const each = simPids.map((pid) => pct(f.sim.get(pid) as number, t.sim.get(pid) as number)).filter((v) => v >= 1);
    figure("  simulator CPU, all processes", simTotal, `% of one core (${each.map((v) => `${Math.round(v)} %`).join(" + ")})`);
    servers.forEach((_s, i) => {
      const c = commitFigures(f.commits[i] as Commits, t.commits[i] as Commits);
      figure(`  server ${i + 1} CPU`, pct(f.servers[i] as number, t.servers[i] as number), `% of one core; commits: mean ${c.meanMs.toFixed(1)} ms, 90 % ${c.p90}, ${c.perBatch.toFixed(0)} events each`);
      // Where the server's threads spent the window: on a CPU, or runnable and waiting for one.
      const a = f.threads[i] as ReturnType<typeof threads>;
      const b = t.threads[i] as ReturnType<typeof threads>;
      const part = (name: string, x: [number, number] | null, y: [number, number] | null): string =>
        x && y ? `${name} ${pct(x[0], y[0]).toFixed(0)} % on a CPU, ${pct(x[1], y[1]).toFixed(0)} % waiting for one` : "";
      process.stdout.write(`    threads: ${[part("event loop", a.main, b.main), part("ingest thread", a.ingest, b.ingest), part("others", a.others, b.others)].filter(Boolean).join("; ")}\n`);
    });
    if (db) figure("  PostgreSQL CPU, all its processes", pct(f.pg, t.pg), "% of one core");
    process.stdout.write(`  the simulator says: limited by ${report.simulator.bottleneck} (${report.simulator.reason})\n`);
    if (db) {
      // On-disk bytes per stored reading and per idempotency key (tables and their indexes), for the capacity model.
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      try {
        const size = async (table: string): Promise<[number, number]> => {
          const parts = await c.query<{ oid: string }>(
            `SELECT c.oid::regclass::text AS oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relkind = 'r' AND (c.relname = $2 OR c.relname LIKE $2 || '\\_%')`,
            [db.schema, table],
          );
          let bytes = 0;
          for (const r of parts.rows) bytes += Number((await c.query<{ b: string }>("SELECT pg_total_relation_size($1::regclass) AS b", [r.oid])).rows[0]?.b);
          const rows = Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${db.schema}.${table}`)).rows[0]?.n);
          return [bytes, rows];
        };
        const [rb, rn] = await size("readings");
        const [kb, kn] = await size("event_keys");
        figure("  PostgreSQL bytes per stored reading (heap + index)", rb / rn, `(${rn} readings)`);
        figure("  PostgreSQL bytes per idempotency key (heap + indexes)", kb / kn, `(${kn} keys)`);
      } finally {
        await c.end();
      }
    }
  } finally {
    if (sim) {
      sim.kill("SIGINT");
      await new Promise((r) => sim?.once("exit", r));
    }
    for (const s of servers) await s.stop().catch(() => undefined);
    await db?.drop();
  }
}

/**
 * What one SQLite ingest commit writes: WAL pages per commit of a batch of readings from distinct
 * blocks of a 10,000-block fleet (one device each), with and without idempotency keys and block
 * touches (automatic checkpoints off, so the WAL only grows). Each distinct row a commit changes is
 * a page; pages are what the ingest thread writes, flushes and later checkpoints.
 */
async function walPart(dir: string): Promise<void> {
  const { statSync } = await import("node:fs");
  const { openSqliteStore } = await import("../server/store/sqlite/index.js");
  const blocks = 10_000;
  const node = (i: number): string => `WALP${String(i).padStart(8, "0")}`;
  process.stdout.write(`\nSQLite ingest: WAL pages per commit, readings from distinct blocks of ${blocks} (1 device each):\n`);
  let baseline = Number.NaN;
  for (const batchSize of [60, 300]) {
    for (const [label, keys, touchShare] of [
      ["readings only", false, 0],
      ["+ idempotency keys", true, 0],
      ["+ keys + touch on every event (last_active every second)", true, 1],
      ["+ keys + touch on one event in 10 (every 10 s)", true, 0.1],
    ] as const) {
      const store = openSqliteStore({ dataDir: join(dir, `wal-${batchSize}-${label.length}-${touchShare}`), ingestThread: false });
      try {
        store.db.prepare("INSERT INTO users (id, name, created) VALUES (1, 'u', 0)").run();
        let ts = Date.now();
        let k = 0;
        const ev = (i: number, touch: boolean) => ({
          kind: "data" as const, userId: 1, node: node(i), guid: `${node(i)}_1_0_9`, G: "1", V: 0, D: 9, DA: "21.5", num: 21.5, ts,
          ...(keys ? { key: `k${k++}` } : {}),
          ...(touch ? { touch: ts } : {}),
        });
        for (let i = 0; i < blocks; i += 1000) await store.events.commit(Array.from({ length: 1000 }, (_, j) => ev(i + j, true)));
        store.db.pragma("wal_checkpoint(TRUNCATE)");
        store.db.pragma("wal_autocheckpoint = 0");
        const wal = join(dir, `wal-${batchSize}-${label.length}-${touchShare}`, "blockkit.db-wal");
        const rounds = 200;
        const before = statSync(wal).size;
        for (let r = 0; r < rounds; r++) {
          ts += 1;
          const picked = new Set<number>();
          while (picked.size < batchSize) picked.add(Math.floor(Math.random() * blocks));
          await store.events.commit([...picked].map((i) => ev(i, Math.random() < touchShare)));
        }
        const pageSize = store.db.pragma("page_size", { simple: true }) as number;
        const pages = (statSync(wal).size - before) / (pageSize + 24) / rounds;
        if (label === "readings only" && batchSize === 60) baseline = pages;
        figure(`  ${batchSize} readings, ${label}`, pages, "WAL pages per commit", { name: "readings only, 60", value: baseline });
      } finally {
        await store.close();
      }
    }
  }
}

async function main(): Promise<void> {
  process.stdout.write(`machine: ${machine()}\n`);
  const dir = mkdtempSync(join(tmpdir(), "bk-bench-scaleout-"));
  try {
    if (PARTS.includes("wal")) await walPart(dir);
    if (PARTS.includes("ingest")) await ingestPart(dir);
    if (PARTS.includes("polls")) await pollsPart(dir);
    if (PARTS.includes("fleet")) for (const spec of FLEET) await fleetPart(dir, spec);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
