/**
 * `npm run bench -- scaleout`: ingest on PostgreSQL against ingest on SQLite in the same run (64
 * blocks, 64 connections), one PostgreSQL instance against two on the same database (the load split
 * over both), and the cross-instance command latency (PUT on A -> the poll held on B answered).
 * Needs the PostgreSQL of the tests (BLOCKKIT_TEST_PG / DATABASE_URL / 127.0.0.1:5432 db test);
 * each run uses a schema of its own, dropped afterwards.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import { type Proc, startServer } from "./fixtures/procs.js";
import { figure, percentile } from "./lib.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const LATENCY_SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const ADMIN = "bench-admin-token-scaleout-01";
const PG_URL = process.env.BLOCKKIT_TEST_PG ?? process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const nodeId = (i: number): string => `SCALE${String(i).padStart(8, "0")}`;

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

async function main(): Promise<void> {
  const schema = `bk_bench_${process.pid}`;
  const u = new URL(PG_URL);
  u.searchParams.set("schema", schema);
  const dbUrl = u.toString();
  const dir = mkdtempSync(join(tmpdir(), "bk-bench-scaleout-"));
  const procs: Proc[] = [];
  try {
    // SQLite, one instance.
    const lite = await startServer(join(dir, "sqlite"), ADMIN);
    procs.push(lite);
    const l = await activate(lite.port, 64);
    const sqlite = await rps([lite], l.nodes, l.tokens);
    await lite.stop();
    // PostgreSQL, one instance, then two.
    const a = await startServer(join(dir, "a"), ADMIN, ["--db", dbUrl, "--poll-hold", "30"]);
    procs.push(a);
    const b = await startServer(join(dir, "b"), ADMIN, ["--db", dbUrl, "--poll-hold", "30"]);
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
    figure("command PUT on A -> poll on B answered, p50", percentile(samples, 50), "ms");
    figure("command PUT on A -> poll on B answered, p99", percentile(samples, 99), "ms");
  } finally {
    for (const proc of procs) await proc.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await c.end();
  }
}

await main();
