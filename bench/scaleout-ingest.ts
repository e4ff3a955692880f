/**
 * `BENCH_SCALEOUT=ingest`: ingest on SQLite without callbacks and with a callback on every device
 * (and on the build at BENCH_BASE, alternated), then ingest on PostgreSQL against SQLite, one
 * instance against two on the same database, and the cross-instance command latency with one poll
 * held. Apart from bench/scaleout.bench.ts, which picks the parts to run.
 */
import { loadavg } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { untilHeldPolls } from "./fixtures/held-polls.js";
import { pgSchema } from "./fixtures/pg-schema.js";
import { cpuTimeMs as cpuMs } from "./fixtures/proc-stats.js";
import { type Proc, startServer } from "./fixtures/procs.js";
import { type BenchReceiver, startReceiver } from "./fixtures/receiver.js";
import { figure, median, percentile } from "./lib.js";
import { ADMIN, activate, held, json } from "./scaleout-servers.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const LATENCY_SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);

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

export async function ingestPart(dir: string): Promise<void> {
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
    // Polls answered at once with a command of an earlier sample, still queued on the database (see below).
    let stale = 0;
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      let polled: Promise<unknown>;
      for (;;) {
        polled = json(`http://127.0.0.1:${b.port}/rest/v0/block/${node}/commands`, { headers: { "x-service-token": token } });
        let answered = false;
        void polled.then(
          () => (answered = true),
          () => (answered = true),
        );
        // Held once B's health says so (bounded). A poll opened just after the previous one was
        // answered may find a command of an earlier sample still queued and get it again at once
        // (seen: a few in 50): no sample, open another (before, it was timed as one, the PUT alone).
        if ((await untilHeldPolls(() => held(b.port), 1, { what: `on B (:${b.port})`, given: () => answered })) >= 0) break;
        await polled;
        if (++stale > LATENCY_SAMPLES) throw new Error(`${stale} polls on B answered at once, with commands already answered`);
      }
      const t0 = performance.now();
      await json(`http://127.0.0.1:${a.port}/rest/v0/device/${guid}?user_access_token=${ADMIN}`, { method: "PUT", body: JSON.stringify({ DA: String(i % 2) }) });
      await polled;
      samples.push(performance.now() - t0);
    }
    samples.sort((x, y) => x - y);
    figure("command PUT on A -> poll on B answered (1 poll held), p50", percentile(samples, 50), "ms");
    figure("command PUT on A -> poll on B answered (1 poll held), p99", percentile(samples, 99), "ms");
    figure("polls on B answered at once with an earlier sample's command (not sampled)", stale, "");
  } finally {
    for (const proc of procs) await proc.stop().catch(() => undefined);
    await db.drop();
  }
}
