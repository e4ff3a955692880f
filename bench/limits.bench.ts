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
import { type ChildProcess, fork } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, setPriority, tmpdir } from "node:os";
import { join } from "node:path";
import { AuthService } from "../server/services/auth.js";
import { openSqliteStore } from "../server/store/sqlite/index.js";
import type { Sample } from "./fixtures/normal-client.js";
import { type Proc, startServer } from "./fixtures/procs.js";
import type { Report } from "./fixtures/slow-body.js";
import { figure, machine, percentile } from "./lib.js";
import { cost } from "./limits-cost.js";
import { ADMIN, type Tick, buildOf, cpuOf, listenDrops, monitorAgent, nodeId, root, tick, waitedOf } from "./limits-servers.js";

const POLLS = Number(process.env.BENCH_POLLS ?? 10_000);
const ATTACKERS = Number(process.env.BENCH_ATTACKERS ?? 10_000);
const ATTACK_ADDRESSES = Number(process.env.BENCH_ATTACK_ADDRESSES ?? 8);
const ATTACK_SECONDS = Number(process.env.BENCH_ATTACK_SECONDS ?? 45);
const PROCS = 2;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const tsx = { execArgv: ["--import", "tsx"] };

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

process.stdout.write(`machine: ${machine()}\n`);
const only = process.env.BENCH_ONLY;
const started = performance.now();
if (!only || only === "hold") await hold();
if (!only || only === "cost") await cost();
process.stdout.write(`limits bench took ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
monitorAgent.destroy();
