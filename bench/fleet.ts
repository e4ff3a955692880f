/**
 * The fleet parts of `npm run bench -- scaleout` (runs: fixtures/fleet-run.ts):
 *  - fleet: each spec of BENCH_FLEET in turn (e.g. "sqlite:10000@base,sqlite:10000" alternates the
 *    baseline build at BENCH_BASE with this one), with every figure of each run;
 *  - search: per setup of BENCH_SEARCH_SETUPS (default "sqlite"; e.g. "sqlite,pg2,pg3"), the largest
 *    fleet that keeps up: acknowledged ≥ 0.99 × offered, ack p99 < 100 ms, every block activated
 *    and errors under 0.1 % of the events. The highest N (BENCH_SEARCH_HI, default 19,000: a
 *    server's connection cap here is 19,488) first, then a bisection from BENCH_SEARCH_LO (default
 *    2,000, not run) in steps of 500, at most BENCH_SEARCH_STEPS runs (default 4) and
 *    BENCH_SEARCH_BUDGET_S seconds (default 420) per setup, one step of each setup in turn
 *    ("sqlite@base,sqlite" alternates main's build with this one); then a table of the setups.
 */
import { type FleetResult, type ServerFigures, parseSpec, runFleet } from "./fixtures/fleet-run.js";
import { figure } from "./lib.js";

const pc = (v: number): string => `${Math.round(v)} %`;
const ms = (v: number): string => (v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(v < 10 ? 1 : 0)} ms`);

export function printFleet(r: FleetResult): void {
  const { spec } = r;
  const against = spec.kind === "sqlite" ? "one SQLite server" : `${spec.instances} instances on PostgreSQL`;
  process.stdout.write(
    `\nfleet: ${spec.blocks} blocks × 1 reading/s, simulator --workers ${spec.workers}, against ${against}${spec.base ? " (baseline build)" : ""}${Object.keys(spec.env).length ? ` ${JSON.stringify(spec.env)}` : ""} (measured ${r.seconds} s, load average ${r.load[0].toFixed(1)} → ${r.load[1].toFixed(1)}, machine busy ${pc(r.machineBusy)} of 200):\n`,
  );
  figure("  blocks activated", r.activated, `of ${spec.blocks}`);
  figure("  acknowledged", r.perS, "events/s", { name: "offered", value: spec.blocks });
  figure("  ingest ack p50", r.p50, "ms");
  figure("  ingest ack p99", r.p99, "ms");
  figure("  errors", r.errors, Object.entries(r.errorsByKind).map(([k, v]) => `${k} ${v}`).join(", "));
  figure("  throttled (429, asked again)", r.throttled, Object.entries(r.throttledByKind).map(([k, v]) => `${k} ${v}`).join(", "));
  figure("  simulator CPU, all processes", r.simCpu, `% of one core (${r.simEach.map(pc).join(" + ")})`);
  r.servers.forEach((s, i) => {
    figure(`  server ${i + 1} CPU`, s.cpu, `% of one core; commits: mean ${s.commitMeanMs.toFixed(1)} ms, 90 % ${s.commitP90}, ${s.perBatch.toFixed(0)} events each; ${s.fds} open files`);
    const part = (name: string, x: [number, number] | null): string => (x ? `${name} ${pc(x[0])} on a CPU, ${pc(x[1])} waiting for one` : "");
    process.stdout.write(`    threads: ${[part("event loop", s.eventLoop), part("ingest thread", s.ingest), part("others", s.others)].filter(Boolean).join("; ")}\n`);
    const per = perReading(s, r.perS / r.servers.length);
    process.stdout.write(`    CPU per acknowledged reading: ${per.total.toFixed(1)} µs (event loop ${per.eventLoop.toFixed(1)}, ingest thread ${per.ingest.toFixed(1)}, others ${per.others.toFixed(1)})\n`);
    process.stdout.write(`    GET /metrics at the window's start and end: ${s.scrapeMs.map((v) => ms(v)).join(", ")}\n`);
  });
  if (spec.kind === "pg") figure("  PostgreSQL CPU, all its processes", r.pgCpu, "% of one core");
  if (r.pgBytes) {
    figure("  PostgreSQL bytes per stored reading (heap + index)", r.pgBytes.perReading, `(${r.pgBytes.readings} readings)`);
    figure("  PostgreSQL bytes per idempotency key (heap + indexes)", r.pgBytes.perKey, `(${r.pgBytes.keys} keys)`);
  }
  process.stdout.write(`  the simulator says: limited by ${r.simSays}\n`);
}

/**
 * A server's CPU per reading it acknowledged, µs (its share of the acknowledged rate: the blocks
 * round robin): time on a CPU only, so that, unlike the throughput, it hardly moves with how busy
 * the machine is. 1 % of a core at 1 reading/s is 10,000 µs.
 */
export function perReading(s: ServerFigures, perS: number): { total: number; eventLoop: number; ingest: number; others: number } {
  const us = (pct: number): number => (pct * 10_000) / perS;
  return { total: us(s.cpu), eventLoop: us(s.eventLoop[0]), ingest: us(s.ingest?.[0] ?? 0), others: us(s.others[0]) };
}

/** Whether a run kept up: the search's criterion. */
export function keptUp(r: FleetResult): boolean {
  return r.ratio >= 0.99 && r.p99 < 100 && r.activated === r.spec.blocks && r.errors <= 0.001 * r.perS * r.seconds;
}

/** What a run that did not keep up ran into, from its figures (the busiest first). */
export function limitOf(r: FleetResult): string {
  // Which criterion failed first (acknowledged/offered to 3 places: 0.987 prints as 0.99).
  const missed = [
    r.ratio < 0.99 ? `${r.ratio.toFixed(3)} × offered` : "",
    r.p99 >= 100 ? `p99 ${ms(r.p99)}` : "",
    r.activated < r.spec.blocks ? `${r.activated} of ${r.spec.blocks} activated` : "",
  ].filter(Boolean);
  const out: string[] = missed.length > 0 ? [`missed: ${missed.join(", ")}`] : [];
  const criteria = out.length;
  const fdCap = 20_000 - 512;
  for (const [i, s] of r.servers.entries()) {
    if (s.fds >= 0.97 * fdCap) out.push(`server ${i + 1}'s open files (${s.fds} of ${fdCap} connections)`);
  }
  const sim = Math.max(0, ...r.simEach);
  if (sim >= 85) out.push(`a simulator process's CPU (${pc(sim)})`);
  for (const [i, s] of r.servers.entries()) {
    if (s.eventLoop[0] >= 85) out.push(`server ${i + 1}'s event loop CPU (${pc(s.eventLoop[0])})`);
    if (s.ingest && s.ingest[0] >= 85) out.push(`server ${i + 1}'s ingest thread CPU (${pc(s.ingest[0])})`);
  }
  if (r.pgCpu >= 85) out.push(`PostgreSQL CPU (${pc(r.pgCpu)})`);
  const servers = r.servers.reduce((a, s) => a + s.cpu, 0);
  for (const [i, s] of r.servers.entries()) {
    if (s.cpu >= 70) out.push(`server ${i + 1}'s CPU (${pc(s.cpu)} of a core: event loop ${pc(s.eventLoop[0])}${s.ingest ? `, ingest thread ${pc(s.ingest[0])}` : ""})`);
  }
  // Busy above 150 % of the two cores: every runnable thread meets others in the queue.
  const own = r.simCpu + servers + (Number.isNaN(r.pgCpu) ? 0 : r.pgCpu);
  if (r.machineBusy >= 150) out.push(`the two cores (${pc(r.machineBusy)} of 200 busy: this run ${pc(own)}, other work ${pc(Math.max(0, r.machineBusy - own))})`);
  const waits = r.servers.flatMap((s) => [s.eventLoop, ...(s.ingest ? [s.ingest] : [])]).filter(([run, wait]) => wait > run);
  if (waits.length > 0) out.push(`server threads waiting for a CPU longer than on one (${waits.map(([run, wait]) => `${pc(run)} on, ${pc(wait)} waiting`).join("; ")})`);
  const slow = r.servers.filter((s) => s.commitMeanMs >= 50);
  if (slow.length > 0) out.push(`commit latency (mean ${slow.map((s) => ms(s.commitMeanMs)).join(", ")}, ${slow.map((s) => s.perBatch.toFixed(0)).join(", ")} events each)`);
  if (r.errors > 0) out.push(`errors: ${Object.entries(r.errorsByKind).map(([k, v]) => `${k} ${v}`).join(", ")}`);
  return out.length > criteria ? out.join("; ") : [...out, "no process saturated"].join("; ");
}

export async function fleetPart(dir: string, specs: string[], admin: string): Promise<void> {
  for (const spec of specs) {
    // One failed run (a simulator that exits without its report) does not lose the others.
    const r = await runFleet(dir, spec, admin, { pgSizes: true }).catch((err: unknown) => {
      process.stdout.write(`\nfleet ${spec}: failed: ${err instanceof Error ? err.message : String(err)}\n`);
      return null;
    });
    if (r) printFleet(r);
  }
}

const GRAIN = 500;

/** `setup` with N inserted: "sqlite:2@base" -> "sqlite:N:2@base". */
const specOf = (setup: string, n: number): string => setup.replace(/^(sqlite|pg\d+)/, `$1:${n}`);

interface Search {
  setup: string;
  lo: number;
  hi: number;
  next: number | null;
  step: number;
  best: FleetResult | null;
  firstFail: FleetResult | null;
  lines: string[];
  ms: number;
}

/** One step of a search: runs its next N, prints its row, narrows the interval. */
async function searchStep(dir: string, admin: string, s: Search, grain: number): Promise<void> {
  const n = s.next as number;
  const t0 = Date.now();
  const r = await runFleet(dir, specOf(s.setup, n), admin);
  s.ms += Date.now() - t0;
  s.step++;
  const ok = keptUp(r);
  const servers = r.servers
    .map((v) => `${pc(v.cpu)} (${pc(v.eventLoop[0])} / ${pc(v.eventLoop[1])}${v.ingest ? `; ${pc(v.ingest[0])} / ${pc(v.ingest[1])}` : ""}), ${perReading(v, r.perS / r.servers.length).total.toFixed(0)} µs a reading`)
    .join(", ");
  const commits = r.servers.map((v) => `${ms(v.commitMeanMs)} × ${v.perBatch.toFixed(0)}`).join(", ");
  const line = `| ${s.setup} | ${s.step} | ${n} | ${r.ratio.toFixed(2)} | ${ms(r.p50)} | ${ms(r.p99)} | ${r.errors} | ${pc(r.simCpu)} (${r.simEach.map(pc).join(" + ")}) | ${servers} | ${commits} | ${Number.isNaN(r.pgCpu) ? "—" : pc(r.pgCpu)} | ${pc(r.machineBusy)} | ${r.load[0].toFixed(1)} → ${r.load[1].toFixed(1)} | ${ok ? "yes" : `no: ${limitOf(r)}`} |`;
  s.lines.push(line);
  process.stdout.write(`${line}\n`);
  if (ok) {
    s.best = r;
    s.lo = n;
  } else {
    if (!s.firstFail || n < s.firstFail.spec.blocks) s.firstFail = r;
    s.hi = n;
  }
  s.next = s.hi - s.lo <= grain ? null : Math.max(s.lo + grain, Math.min(s.hi - grain, Math.round((s.lo + s.hi) / 2 / grain) * grain));
}

/** The setups are searched in lockstep (one step of each in turn): alternated rounds, so the machine's load meets them all alike. */
export async function searchPart(dir: string, admin: string): Promise<void> {
  const setups = (process.env.BENCH_SEARCH_SETUPS ?? "sqlite").split(",").filter(Boolean);
  const lo0 = Number(process.env.BENCH_SEARCH_LO ?? 2000);
  const hi0 = Number(process.env.BENCH_SEARCH_HI ?? 19_000);
  const steps = Number(process.env.BENCH_SEARCH_STEPS ?? 4);
  const budget = Number(process.env.BENCH_SEARCH_BUDGET_S ?? 420) * 1000;
  if (!(lo0 > 0 && hi0 > lo0 && steps >= 1 && budget > 0)) throw new Error("BENCH_SEARCH_LO < BENCH_SEARCH_HI, BENCH_SEARCH_STEPS ≥ 1 and BENCH_SEARCH_BUDGET_S > 0, please");
  for (const setup of setups) {
    if (specOf(setup, 1) === setup) throw new Error(`BENCH_SEARCH_SETUPS: "${setup}" is not sqlite or pgK[:workers][+VAR=value…][@base]`);
    parseSpec(specOf(setup, 1)); // throws on the rest
  }
  const searches: Search[] = setups.map((setup) => ({ setup, lo: lo0, hi: hi0, next: hi0, step: 0, best: null, firstFail: null, lines: [], ms: 0 }));
  process.stdout.write(
    `\nsearch: the largest N in [${lo0}, ${hi0}] at ≥ 0.99 × offered with ack p99 < 100 ms, per setup (${setups.join(", ")}), at most ${steps} runs and ${budget / 1000} s each\n`,
  );
  process.stdout.write(
    "| setup | step | N | ack / offered | p50 | p99 | errors | sim CPU | server CPU (event loop on / waiting; ingest on / waiting) | commits (mean × events) | PostgreSQL CPU | machine busy | load | kept up |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
  );
  for (let round = 0; round < steps; round++) {
    for (const s of searches) if (s.next !== null && s.ms < budget) await searchStep(dir, admin, s, GRAIN);
  }
  process.stdout.write("\n| setup | largest N kept up | smallest N that did not | what limited it | search time |\n|---|---|---|---|---|\n");
  for (const s of searches) {
    const largest = s.best ? String(s.best.spec.blocks) : `none measured (< ${s.firstFail?.spec.blocks ?? hi0}; ${lo0} not run)`;
    process.stdout.write(`| ${s.setup} | ${largest} | ${s.firstFail ? s.firstFail.spec.blocks : "—"} | ${s.firstFail ? limitOf(s.firstFail) : `none up to ${hi0}`} | ${(s.ms / 1000).toFixed(0)} s |\n`);
  }
}
