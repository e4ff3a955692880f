/**
 * `npm run bench -- scaleout`, in parts (BENCH_SCALEOUT, comma-separated; default "ingest,polls"):
 *  - ingest: ingest on SQLite without callbacks and with a callback on every device (64 blocks, 64
 *    connections; each reading's delivery written to the durable outbox by its commit and POSTed to
 *    a receiver process): requests/s and the server's CPU per request; with BENCH_BASE (a built
 *    tree, e.g. a detached worktree of main) the same on its server, alternated over BENCH_ROUNDS
 *    rounds (default 2), with the ratios. Then (BENCH_INGEST=sqlite leaves it out) ingest on
 *    PostgreSQL against SQLite, one PostgreSQL instance against two on the same database (the load
 *    split over both), and the cross-instance command latency with one poll held;
 *  - polls: the cross-instance command latency (PUT on A -> the poll held on B answered) with
 *    BENCH_POLLS (default 10,000) polls held over two instances, renewed as blocks renew them;
 *  - wal: WAL pages one SQLite ingest commit writes (keys, block touches), in this process;
 *  - fleet: `blockkit sim` with N blocks × 1 reading/s against one SQLite server, two and three
 *    instances on PostgreSQL (BENCH_FLEET, e.g. "sqlite:10000,pg2:10000,pg3:10000"; "@base" runs
 *    the servers of the build at BENCH_BASE): acknowledged against offered, ack p50/p99, the CPU of
 *    every process (simulator processes, each server, PostgreSQL) and the servers' commit times
 *    over the measured window (bench/fleet.ts);
 *  - search: the largest fleet each setup keeps up with (BENCH_SEARCH_SETUPS, bench/fleet.ts);
 *  - checkpoint: the SQLite ingest thread's cost per reading with the WAL checkpointed every 1,000
 *    pages and every WAL_AUTOCHECKPOINT_PAGES, alternated (bench/checkpoint.ts);
 *  - scrape: the CPU of one scrape of the process metrics with a fleet's connections open, every
 *    prom-client default gauge against the server's set, alternated (bench/scrape.ts).
 * Needs the PostgreSQL of the tests (BLOCKKIT_TEST_PG / DATABASE_URL / 127.0.0.1:5432 db test);
 * each run uses a schema of its own, dropped afterwards.
 */
import { type ChildProcess, fork } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { checkpointPart } from "./checkpoint.js";
import { fleetPart, searchPart } from "./fleet.js";
import { scrapePart } from "./scrape.js";
import { pgSchema } from "./fixtures/pg-schema.js";
import { cpuTimeMs as cpuMs } from "./fixtures/proc-stats.js";
import { type Proc, startServer } from "./fixtures/procs.js";
import { type BenchReceiver, startReceiver } from "./fixtures/receiver.js";
import { figure, machine, median, percentile } from "./lib.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const LATENCY_SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const ADMIN = "bench-admin-token-scaleout-01";
const nodeId = (i: number): string => `SCALE${String(i).padStart(8, "0")}`;
const PARTS = (process.env.BENCH_SCALEOUT ?? "ingest,polls").split(",");
const POLLS = Number(process.env.BENCH_POLLS ?? 10_000);
const POLL_SAMPLES = Number(process.env.BENCH_POLL_SAMPLES ?? 300);
const HOLD_S = 30;
const FLEET = (process.env.BENCH_FLEET ?? "sqlite:10000,pg2:10000").split(",").filter(Boolean);

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

/** One SQLite server (of the tree at `cwd`) under the ingest load, a callback on every device or none. */
async function sqliteIngest(dataDir: string, cwd: string | undefined, receiver: BenchReceiver | null): Promise<{ rps: number; cpuUs: number; errors: number; delivered: number }> {
  const lite = await startServer(dataDir, ADMIN, [], cwd);
  try {
    const l = await activate(lite.port, 64);
    if (receiver) {
      for (const [i, node] of l.nodes.entries()) {
        await json(`http://127.0.0.1:${lite.port}/rest/v0/block/${node}/data`, { method: "POST", headers: { "x-service-token": l.tokens[i] as string }, body: JSON.stringify({ G: "0", V: 0, D: 9, DA: "0" }) });
        await json(`http://127.0.0.1:${lite.port}/rest/v0/device/${node}_0_0_9/callback?user_access_token=${ADMIN}`, { method: "POST", body: JSON.stringify({ url: receiver.url }) });
      }
    }
    await load([lite.port], l.nodes, l.tokens, 2); // warm-up
    const before = receiver ? await receiver.count() : 0;
    const cpu0 = cpuMs(lite.child.pid);
    const [r] = await load([lite.port], l.nodes, l.tokens, SECONDS);
    const cpu = cpuMs(lite.child.pid) - cpu0;
    const requests = r?.requests.total ?? 0;
    const delivered = receiver ? (await receiver.count()) - before : 0;
    return { rps: r?.requests.average ?? 0, cpuUs: (cpu * 1000) / requests, errors: (r?.errors ?? 0) + (r?.timeouts ?? 0) + (r?.non2xx ?? 0), delivered: delivered / requests };
  } finally {
    await lite.stop();
  }
}

/** SQLite ingest without and with callbacks, this tree (and the build at BENCH_BASE, alternated). */
async function sqliteCallbacksIngest(dir: string): Promise<void> {
  const base = process.env.BENCH_BASE;
  const rounds = Number(process.env.BENCH_ROUNDS ?? (base ? 2 : 1));
  const trees: { name: string; cwd: string | undefined }[] = [{ name: "this tree", cwd: undefined }];
  if (base) trees.push({ name: "base", cwd: base });
  const receiver = await startReceiver();
  const runs = new Map<string, { rps: number[]; cpuUs: number[] }>();
  try {
    for (let round = 0; round < rounds; round++) {
      for (const tree of round % 2 === 0 ? trees : [...trees].reverse()) {
        for (const cb of [false, true]) {
          const key = `${tree.name}, ${cb ? "a callback on every device" : "no callback"}`;
          const la = loadavg()[0]?.toFixed(2);
          const r = await sqliteIngest(join(dir, `sqlite-${round}-${tree.name.replace(" ", "-")}-${cb}`), tree.cwd, cb ? receiver : null);
          process.stdout.write(`  round ${round + 1}, ${key}: ${r.rps.toFixed(0)} req/s, ${r.cpuUs.toFixed(1)} µs CPU/request, ${r.errors} errors${cb ? `, ${r.delivered.toFixed(3)} deliveries/request` : ""} (load ${la})\n`);
          const entry = runs.get(key) ?? { rps: [], cpuUs: [] };
          entry.rps.push(r.rps);
          entry.cpuUs.push(r.cpuUs);
          runs.set(key, entry);
        }
      }
    }
  } finally {
    receiver.close();
  }
  const med = (key: string, f: "rps" | "cpuUs"): number => median(runs.get(key)?.[f] ?? []);
  for (const tree of trees) {
    const none = `${tree.name}, no callback`;
    const cb = `${tree.name}, a callback on every device`;
    figure(`ingest SQLite (64 blocks, 64 connections), ${none}`, med(none, "rps"), "req/s");
    figure(`  server CPU per request, ${none}`, med(none, "cpuUs"), "µs");
    figure(`ingest SQLite, ${cb}`, med(cb, "rps"), "req/s", { name: "no callback", value: med(none, "rps") });
    figure(`  server CPU per request, ${cb}`, med(cb, "cpuUs"), "µs", { name: "no callback", value: med(none, "cpuUs") });
  }
  if (base) {
    for (const what of ["no callback", "a callback on every device"]) {
      figure(`this tree against base, ${what}: req/s`, med(`this tree, ${what}`, "rps"), "req/s", { name: "base", value: med(`base, ${what}`, "rps") });
      figure(`this tree against base, ${what}: CPU per request`, med(`this tree, ${what}`, "cpuUs"), "µs", { name: "base", value: med(`base, ${what}`, "cpuUs") });
    }
  }
}

async function ingestPart(dir: string): Promise<void> {
  await sqliteCallbacksIngest(dir);
  if (process.env.BENCH_INGEST === "sqlite") return;
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
    if (PARTS.includes("checkpoint")) await checkpointPart(dir);
    if (PARTS.includes("ingest")) await ingestPart(dir);
    if (PARTS.includes("polls")) await pollsPart(dir);
    if (PARTS.includes("fleet")) await fleetPart(dir, FLEET, ADMIN);
    if (PARTS.includes("search")) await searchPart(dir, ADMIN);
    if (PARTS.includes("scrape")) await scrapePart();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
