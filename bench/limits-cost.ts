/**
 * The cost part of the limits bench (`BENCH_ONLY=cost npm run bench -- limits`): ingest (64
 * connections) and command latency (PUT -> held poll answered) on the commit before the limits
 * landed, the commit that landed them and this tree (or BENCH_BASE and this tree), alternated over
 * BENCH_ROUNDS rounds. Apart from bench/limits.bench.ts (the hold part) because it measures what the
 * limits cost without an attack, on servers of its own.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { untilHeldPolls } from "./fixtures/held-polls.js";
import { type Proc, startServer } from "./fixtures/procs.js";
import { figure, median, percentile } from "./lib.js";
import { ADMIN, buildOf, get, nodeId, root } from "./limits-servers.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
/** The commit that landed the limits (f88942c); the baseline is its parent. */
const LIMITS_COMMIT = "f88942c46878c7fe73e43a74824650bed95c8cf3";

interface Variant {
  name: string;
  srv: Proc;
  nodes: string[];
  tokens: string[];
  rps: number[];
  command: number[];
}

async function json(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<unknown> {
  const res = await fetch(`http://127.0.0.1:${port}/rest/v0${path}`, { method, headers: { "content-type": "application/json", ...headers }, body });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

function ingest(v: Variant, seconds: number): Promise<autocannon.Result> {
  const body = JSON.stringify({ G: "0", V: 0, D: 9, DA: "21.5" });
  let next = 0;
  return autocannon({
    url: `http://127.0.0.1:${v.srv.port}`,
    connections: 64,
    duration: seconds,
    setupClient: (client: autocannon.Client) => {
      const i = next++ % v.nodes.length;
      client.setRequests([
        { method: "POST", path: `/rest/v0/block/${v.nodes[i]}/data`, headers: { "content-type": "application/json", "x-service-token": v.tokens[i] as string }, body } as autocannon.Request,
      ]);
    },
  });
}

/** PUT of a command -> the held poll answered, `n` times, ms each. */
async function commands(v: Variant, n: number): Promise<void> {
  const node = v.nodes[0] as string;
  const token = v.tokens[0] as string;
  for (let i = 0; i < n; i++) {
    const polled = json(v.srv.port, "GET", `/block/${node}/commands`, { "x-service-token": token });
    await untilHeldPolls(async () => (JSON.parse(await get(v.srv.port, "/healthz")) as { heldPolls: number }).heldPolls, 1, { what: `on :${v.srv.port}` });
    const t0 = performance.now();
    await json(v.srv.port, "PUT", `/device/${node}_0_0_1002?user_access_token=${ADMIN}`, {}, JSON.stringify({ DA: String(i % 2) }));
    await polled;
    v.command.push(performance.now() - t0);
  }
}

export async function cost(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "bk-bench-limits-cost-"));
  // BENCH_BASE=<commit>: that commit against this tree (e.g. main before a change to admission).
  const base = process.env.BENCH_BASE;
  const trees: [string, string][] = base
    ? [[`base (${base})`, buildOf(base)], ["this tree", root]]
    : [["before limits (f88942c~1)", buildOf(`${LIMITS_COMMIT}~1`)], ["limits landed (f88942c)", buildOf(LIMITS_COMMIT)], ["this tree", root]];
  const variants: Variant[] = [];
  try {
    for (const [name, cwd] of trees) {
      const srv = await startServer(join(dir, String(variants.length)), ADMIN, [], cwd);
      const nodes = Array.from({ length: 64 }, (_, i) => nodeId(i));
      const tokens: string[] = [];
      for (const n of nodes) tokens.push(((await json(srv.port, "GET", `/block/${n}/activate?user_access_token=${ADMIN}`)) as { token: string }).token);
      await json(srv.port, "POST", `/block/${nodes[0]}/data`, { "x-service-token": tokens[0] as string }, JSON.stringify({ G: "0", V: 0, D: 1002, DA: "0" }));
      variants.push({ name, srv, nodes, tokens, rps: [], command: [] });
    }
    for (const v of variants) await ingest(v, 2); // warm-up
    let errors = 0;
    for (let round = 0; round < ROUNDS; round++) {
      // A B C, then C B A: each variant runs early and late in a pair of rounds.
      const order = round % 2 === 0 ? variants : [...variants].reverse();
      for (const v of order) {
        const r = await ingest(v, 2);
        errors += r.errors + r.timeouts + r.non2xx;
        v.rps.push(r.requests.average);
        await commands(v, 50);
      }
    }
    const a = variants[0] as Variant;
    process.stdout.write(`\n-- cost: ${ROUNDS} alternated rounds, 2 s of ingest (64 connections) and 50 commands each --\n`);
    for (const v of variants) {
      const cmd = [...v.command].sort((x, y) => x - y);
      process.stdout.write(`${v.name}: ingest ${median(v.rps).toFixed(0)} req/s (median of rounds), command p50 ${percentile(cmd, 50).toFixed(2)} ms, p99 ${percentile(cmd, 99).toFixed(2)} ms\n`);
    }
    const ratio = (x: Variant, y: Variant): string => median(x.rps.map((r, i) => r / (y.rps[i] as number))).toFixed(2);
    const p = (v: Variant, q: number): number => percentile([...v.command].sort((x, y) => x - y), q);
    for (const v of variants.slice(1)) {
      process.stdout.write(`ingest ratio per round, ${v.name} / ${a.name}: ${v.rps.map((r, i) => (r / (a.rps[i] as number)).toFixed(2)).join(" ")}; median ${ratio(v, a)}\n`);
      figure(`command p50, ${v.name}`, p(v, 50), "ms", { name: a.name, value: p(a, 50) });
      figure(`command p99, ${v.name}`, p(v, 99), "ms", { name: a.name, value: p(a, 99) });
    }
    process.stdout.write(`load average (1 min) at the end: ${(loadavg()[0] as number).toFixed(1)}\n`);
    figure("ingest errors (all variants)", errors, "");
  } finally {
    for (const v of variants) await v.srv.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
