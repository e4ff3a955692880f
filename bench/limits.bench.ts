/**
 * `npm run bench -- limits`: the connection limits under attack, and what they cost.
 *  - hold: the real server (defaults) holds POLLS long-polls of real block tokens from 100 source
 *    addresses, then ATTACKERS slow-body attackers (POST /auth/login and /oauth/access_token with
 *    `Content-Length: 60000`, never the body, re-opening 1 s after each close) from ADDRESSES
 *    addresses of 127.0.0.0/8 other than 127.0.0.1 (only 127.0.0.1 and ::1 are exempt from the
 *    per-address cap), while a normal client does GET /devices and PUT of a command on a kept-alive
 *    connection and on a new connection per request. Its percentiles count a request not answered
 *    200 (reset, refused, timed out) as unanswered (Infinity), not leave it out: a p99 over answered
 *    requests alone would hide starvation. Clients are spread over child processes (the open-file
 *    limit is per process).
 *  - cost: ingest (64 connections) and command latency (PUT -> held poll answered) on the commit
 *    before the limits landed, the commit that landed them and this tree, alternated in one run.
 * Run: npm run bench -- limits   (BENCH_ONLY=hold|cost; BENCH_BASE=<commit> runs the cost part
 * against that commit instead of the two around f88942c; BENCH_POLLS, BENCH_ATTACKERS,
 * BENCH_ATTACK_ADDRESSES, BENCH_ATTACK_SECONDS, BENCH_ROUNDS override the sizes; BENCH_HOLD_REF=<commit> runs
 * the hold part against that commit's server, built in a temporary folder)
 */
import { type ChildProcess, execFileSync, fork } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import http from "node:http";
import { loadavg, setPriority, tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { AuthService } from "../server/services/auth.js";
import { openSqliteStore } from "../server/store/sqlite/index.js";
import type { Sample } from "./fixtures/normal-client.js";
import { type Proc, fdsOf, rssOf, startServer } from "./fixtures/procs.js";
import type { Report } from "./fixtures/slow-body.js";
import { figure, machine, median, percentile } from "./lib.js";

const POLLS = Number(process.env.BENCH_POLLS ?? 10_000);
const ATTACKERS = Number(process.env.BENCH_ATTACKERS ?? 10_000);
const ATTACK_ADDRESSES = Number(process.env.BENCH_ATTACK_ADDRESSES ?? 8);
const ATTACK_SECONDS = Number(process.env.BENCH_ATTACK_SECONDS ?? 45);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
/** The commit that landed the limits (f88942c); the baseline is its parent. */
const LIMITS_COMMIT = "f88942c46878c7fe73e43a74824650bed95c8cf3";
const ADMIN = "bench-admin-token-limits-0001";
const PROCS = 2;
const root = join(import.meta.dirname, "..");
const nodeId = (i: number): string => `LIMIT${String(i).padStart(8, "0")}`;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const tsx = { execArgv: ["--import", "tsx"] };
const monitorAgent = new http.Agent({ keepAlive: true, maxSockets: 2 });

function get(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path, agent: monitorAgent, timeout: 5000 }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`GET ${path}: ${res.statusCode} ${text}`))));
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${path}: no answer in 5 s`)));
    req.on("error", reject);
  });
}

interface Tick {
  t: number;
  held: number;
  open: number;
  rss: number;
  fds: number;
  hits: Record<string, number>;
}

/** `scrape`: read /metrics too (it costs the server a readdir of its 10,000 fds: not every second). */
async function tick(srv: Proc, scrape: boolean): Promise<Tick> {
  const pid = srv.child.pid as number;
  const [health, metrics, rss, fds] = await Promise.all([
    get(srv.port, "/healthz").then((t) => JSON.parse(t) as { heldPolls: number }).catch(() => ({ heldPolls: Number.NaN })),
    scrape ? get(srv.port, "/metrics").catch(() => "") : "",
    rssOf(pid),
    fdsOf(pid),
  ]);
  const hits: Record<string, number> = {};
  for (const m of metrics.matchAll(/^blockkit_limit_hits_total\{limit="(\w+)"\} (\d+)/gm)) hits[m[1] as string] = Number(m[2]);
  const open = /^blockkit_open_connections (\d+)/m.exec(metrics);
  return { t: Date.now(), held: health.heldPolls, open: open ? Number(open[1]) : Number.NaN, rss, fds, hits };
}

/** The data directory of the hold benchmark: an admin, POLLS claimed blocks with their tokens, 100 devices. */
async function prepare(dir: string): Promise<{ pairs: [string, string][]; guid: string }> {
  const store = openSqliteStore({ dataDir: dir });
  const auth = new AuthService(store);
  const { user } = await auth.createUser("admin", { token: ADMIN });
  const pairs: [string, string][] = [];
  const now = Date.now();
  for (let i = 0; i < POLLS; i++) {
    await store.blocks.claim(nodeId(i), user.id, now, null);
    pairs.push([nodeId(i), await auth.issue(user.id, "block", { nodeId: nodeId(i) })]);
  }
  const events = Array.from({ length: 100 }, (_, i) => ({
    kind: "data" as const, userId: user.id, node: nodeId(i), guid: `${nodeId(i)}_0_0_1002`, G: "0", V: 0, D: 1002, DA: "0", num: 0, ts: now,
  }));
  await store.events.commit(events);
  await store.close();
  return { pairs, guid: `${nodeId(0)}_0_0_1002` };
}

/** `remote`: the process stands for other machines (polling blocks, attackers): nice 10, so that the server is not starved by them. */
function forkFixture(name: string, args: string[], remote = false): ChildProcess {
  const child = fork(join(import.meta.dirname, "fixtures", name), args, { ...tsx, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  if (remote) setPriority(child.pid as number, 10);
  return child;
}

function ask<T>(child: ChildProcess, message: string): Promise<T> {
  return new Promise((resolve, reject) => {
    child.once("message", (m) => resolve(m as T));
    child.once("exit", (code) => reject(new Error(`fixture exited with ${code} before answering ${message}`)));
    child.send(message);
  });
}

/**
 * Latencies of the normal client's requests, sorted, a request not answered 200 (refused, reset,
 * timed out after 10 s, answered 4xx/5xx) counted as never answered (Infinity): a percentile over
 * answered requests alone would hide starvation, the very thing the limits are there to prevent.
 * So a p99 is finite only when at least 99 % of the requests up to it were answered.
 */
function served(samples: Sample[]): number[] {
  return samples.map((x) => (x.status === 200 ? x.ms : Number.POSITIVE_INFINITY)).sort((a, b) => a - b);
}

const ms = (v: number): string => (Number.isFinite(v) ? `${v.toFixed(1)} ms` : "unanswered");

function latencies(samples: Sample[], from: number, to: number): string {
  const parts: string[] = [];
  for (const conn of ["kept", "new"] as const) {
    const s = samples.filter((x) => x.conn === conn && x.at >= from && x.at < to);
    const all = served(s);
    const failed = all.filter((v) => !Number.isFinite(v)).length;
    parts.push(`${conn} connection: ${s.length} requests, p50 ${ms(percentile(all, 50))}, p99 ${ms(percentile(all, 99))}, max ${ms(all.at(-1) ?? Number.NaN)}, failed ${failed} (counted as unanswered)`);
  }
  return parts.join("\n  ");
}

/** TcpExt ListenDrops of this network namespace: SYNs or handshakes a listener dropped (a full accept queue, ListenOverflows, is one cause). */
async function listenDrops(): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  const lines = (await readFile("/proc/net/netstat", "utf8")).split("\n").filter((l) => l.startsWith("TcpExt:"));
  const names = (lines[0] ?? "").split(" ");
  const values = (lines[1] ?? "").split(" ");
  return Number(values[names.indexOf("ListenDrops")] ?? 0);
}

/** Seconds a process has waited on a run queue for a CPU so far (Linux /proc schedstat). */
async function waitedOf(pid: number): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  return Number((await readFile(`/proc/${pid}/schedstat`, "utf8")).split(" ")[1]) / 1e9;
}

/** CPU seconds (user + system) a process used so far (Linux /proc). */
async function cpuOf(pid: number): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  const f = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]?.split(" ") ?? [];
  return (Number(f[11]) + Number(f[12])) / 100;
}

const sum = (a: number[]): number => a.reduce((x, y) => x + y, 0);
const addUp = (into: number[], a: number[]): void => a.forEach((v, i) => (into[i] = (into[i] ?? 0) + v));

async function hold(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "bk-bench-limits-"));
  const children: ChildProcess[] = [];
  let srv: Proc | undefined;
  const ticks: Tick[] = [];
  let monitoring = true;
  try {
    const t = performance.now();
    const { pairs, guid } = await prepare(dir);
    process.stdout.write(`prepared ${POLLS} block tokens in ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
    // BENCH_HOLD_REF: the server of another commit (built in a temporary folder), to compare.
    const ref = process.env.BENCH_HOLD_REF;
    srv = await startServer(dir, ADMIN, [], ref ? buildOf(ref) : root);
    if (ref) process.stdout.write(`server: ${ref}\n`);
    const server = srv;
    const monitor = (async () => {
      for (let i = 0; monitoring; i++) {
        ticks.push(await tick(server, i % 5 === 0));
        await sleep(1000);
      }
    })();
    // Polls: PROCS processes, 100 polls per source address (127.2.p.k), started over 20 s.
    const per = Math.ceil(POLLS / PROCS);
    for (let p = 0; p < PROCS; p++) {
      const mine = pairs.slice(p * per, (p + 1) * per);
      const file = join(dir, `polls-${p}.json`);
      writeFileSync(file, JSON.stringify(mine));
      const addresses = Array.from({ length: Math.ceil(mine.length / 100) }, (_, k) => `127.2.${p}.${k + 1}`);
      children.push(forkFixture("poll-client.ts", [String(srv.port), file, "20000", JSON.stringify({ addresses, perAddress: 100 })], true));
    }
    const deadline = Date.now() + 120_000;
    while ((ticks.at(-1)?.held ?? 0) < POLLS) {
      if (Date.now() > deadline) throw new Error(`only ${ticks.at(-1)?.held} of ${POLLS} polls held`);
      await sleep(500);
    }
    const normal = forkFixture("normal-client.ts", [String(srv.port), ADMIN, guid, JSON.stringify({ localAddress: "127.4.0.1", intervalMs: 50 })]);
    children.push(normal);
    const calm = Date.now();
    await sleep(10_000);
    const before = await tick(srv, false);
    const dropsBefore = await listenDrops();
    const cpuBefore = await cpuOf(srv.child.pid as number);
    const waitedBefore = await waitedOf(srv.child.pid as number);
    const load = loadavg()[0] as number;
    // Attackers: PROCS processes, each with its share of the addresses 127.5.0.k.
    const attackStart = Date.now();
    const attackers: ChildProcess[] = [];
    const perAddress = Math.ceil(ATTACKERS / ATTACK_ADDRESSES);
    for (let p = 0; p < PROCS; p++) {
      const addresses = Array.from({ length: ATTACK_ADDRESSES }, (_, k) => `127.5.0.${k + 1}`).filter((_, k) => k % PROCS === p);
      if (addresses.length === 0) continue;
      const paths = ["/auth/login", "/oauth/access_token"];
      attackers.push(forkFixture("slow-body.ts", [String(srv.port), JSON.stringify({ addresses, perAddress, paths, retryMs: 1000, rampMs: 3000 })], true));
    }
    children.push(...attackers);
    await sleep(ATTACK_SECONDS * 1000);
    const attackEnd = Date.now();
    const drops = (await listenDrops()) - dropsBefore;
    const cpuServer = (await cpuOf(srv.child.pid as number)) - cpuBefore;
    const cpuAttackers = sum(await Promise.all(attackers.map((a) => cpuOf(a.pid as number))));
    const waited = (await waitedOf(srv.child.pid as number)) - waitedBefore;
    const reports = await Promise.all(attackers.map((a) => ask<Report>(a, "report")));
    const samples = await ask<Sample[]>(normal, "report");
    monitoring = false;
    await monitor;
    ticks.push(await tick(srv, true));
    const during = ticks.filter((k) => k.t >= attackStart && k.t <= attackEnd + 2000);
    const after = ticks.at(-1) as Tick;

    process.stdout.write(`\n-- hold: ${POLLS} polls + ${perAddress * ATTACK_ADDRESSES} slow-body attackers from ${ATTACK_ADDRESSES} addresses (${perAddress} each), ${ATTACK_SECONDS} s --\n`);
    process.stdout.write(`normal client before the attack (10 s):\n  ${latencies(samples, calm, attackStart)}\n`);
    process.stdout.write(`normal client during the attack (${ATTACK_SECONDS} s):\n  ${latencies(samples, attackStart, attackEnd)}\n`);
    const attacked = samples.filter((x) => x.at >= attackStart && x.at < attackEnd);
    const all = served(attacked);
    const failed = all.filter((v) => !Number.isFinite(v)).length;
    figure("normal client p50 during the attack (both connections, failures as unanswered)", percentile(all, 50), "ms");
    figure("normal client p99 during the attack (both connections, failures as unanswered)", percentile(all, 99), "ms (target < 100; Infinity: over 1 % unanswered)");
    figure("normal client requests not answered 200 during the attack", failed, `of ${attacked.length}`);
    const refused: number[] = [];
    const timedOut: number[] = [];
    for (const r of reports) {
      addUp(refused, r.refused.slice(Math.max(0, Math.floor((attackStart - r.t0) / 1000))));
      addUp(timedOut, r.timedOut);
    }
    const after408 = reports.flatMap((r) => r.timedOutAfterMs).sort((a, b) => a - b);
    const other: Record<string, number> = {};
    for (const r of reports) for (const [k, v] of Object.entries(r.other)) other[k] = (other[k] ?? 0) + v;
    figure("attacker connections opened", sum(reports.map((r) => r.attempts)), "");
    figure("attacker connections open at most at once (sum over processes)", sum(reports.map((r) => r.maxOpen)), `(per-address cap 256 × ${ATTACK_ADDRESSES} = ${256 * ATTACK_ADDRESSES})`);
    figure("attacker connections closed at accept (no answer)", sum(refused), "");
    const firstRefused = refused.findIndex((v) => v > 0);
    process.stdout.write(`  first closed at accept in second ${firstRefused} of the attack; per second: ${refused.slice(0, 12).join(" ")} …\n`);
    figure("attacker connections answered 408 and closed", sum(timedOut), "");
    process.stdout.write(
      `  408 after ${percentile(after408, 0).toFixed(0)} ms (min), ${percentile(after408, 50).toFixed(0)} ms (median), ${(after408.at(-1) ?? Number.NaN).toFixed(0)} ms (max) from connect\n`,
    );
    process.stdout.write(`  other outcomes: ${JSON.stringify(other)}\n`);
    figure("connection attempts dropped by the listener (TcpExt ListenDrops)", drops, "");
    figure("held polls at the end of the attack", after.held, `(of ${POLLS}; lowest during the attack ${Math.min(...during.map((k) => k.held))})`);
    figure("server open connections, highest during the attack", Math.max(...during.map((k) => k.open).filter(Number.isFinite)), "");
    figure("server CPU during the attack", cpuServer / ATTACK_SECONDS, "cores");
    figure("attacker processes' CPU during the attack", cpuAttackers / ATTACK_SECONDS, "cores (same 2-core machine, nice 10)");
    figure("server time runnable but waiting for a CPU during the attack", waited / ATTACK_SECONDS, "s per s");
    process.stdout.write(`load average (1 min) before / after the attack: ${load.toFixed(1)} / ${(loadavg()[0] as number).toFixed(1)}\n`);
    figure("server RSS before the attack", before.rss / 2 ** 20, "MiB");
    figure("server RSS, highest during the attack", Math.max(...during.map((k) => k.rss)) / 2 ** 20, "MiB");
    figure("server fds before the attack", before.fds, "");
    figure("server fds, highest during the attack", Math.max(...during.map((k) => k.fds)), "(process limit 20,000)");
    process.stdout.write(`limit hits (/metrics): ${JSON.stringify(after.hits)}\n`);
    process.stdout.write("timeline (s from attack start: held polls, open connections, fds, RSS MiB):\n");
    for (const k of ticks.filter((x) => x.t >= attackStart - 2000).filter((_, i) => i % 5 === 0)) {
      process.stdout.write(`  ${((k.t - attackStart) / 1000).toFixed(0).padStart(3)}: ${k.held} ${k.open} ${k.fds} ${(k.rss / 2 ** 20).toFixed(0)}\n`);
    }
  } finally {
    monitoring = false;
    for (const c of children) c.kill();
    await srv?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A build of `commit` (dist/ and this tree's node_modules) in a temporary folder, kept between runs. */
function buildOf(ref: string): string {
  const commit = execFileSync("git", ["-C", root, "rev-parse", ref], { encoding: "utf8" }).trim();
  const dir = join(tmpdir(), `bk-bench-build-${commit.slice(0, 12)}`);
  if (existsSync(join(dir, "dist", "cli", "index.js"))) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  process.stdout.write(`building ${commit.slice(0, 12)} in ${dir}\n`);
  execFileSync("sh", ["-c", `git -C "${root}" archive ${commit} | tar -x -C "${dir}"`], { stdio: "inherit" });
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"], { cwd: dir, stdio: "inherit" });
  return dir;
}

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
    for (let k = 0; k < 1000; k++) {
      const h = JSON.parse(await get(v.srv.port, "/healthz")) as { heldPolls: number };
      if (h.heldPolls >= 1) break;
    }
    const t0 = performance.now();
    await json(v.srv.port, "PUT", `/device/${node}_0_0_1002?user_access_token=${ADMIN}`, {}, JSON.stringify({ DA: String(i % 2) }));
    await polled;
    v.command.push(performance.now() - t0);
  }
}

async function cost(): Promise<void> {
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

process.stdout.write(`machine: ${machine()}\n`);
const only = process.env.BENCH_ONLY;
const started = performance.now();
if (!only || only === "hold") await hold();
if (!only || only === "cost") await cost();
process.stdout.write(`limits bench took ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
monitorAgent.destroy();
