/**
 * `npm run bench -- scaleout`, in parts (BENCH_SCALEOUT, comma-separated; default "ingest,polls"):
 *  - ingest: ingest on SQLite without callbacks and with a callback on every device (64 blocks, 64
 *    connections; each reading's delivery written to the durable outbox by its commit and POSTed to
 *    a receiver process): requests/s and the server's CPU per request; with BENCH_BASE (a built
 *    tree, e.g. a detached worktree of main) the same on its server, alternated over BENCH_ROUNDS
 *    rounds (default 2), with the ratios. Then (BENCH_INGEST=sqlite leaves it out) ingest on
 *    PostgreSQL against SQLite, one PostgreSQL instance against two on the same database (the load
 *    split over both), and the cross-instance command latency with one poll held
 *    (bench/scaleout-ingest.ts);
 *  - polls: the cross-instance command latency (PUT on A -> the poll held on B answered) with
 *    BENCH_POLLS (default 10,000) polls held over two instances, renewed as blocks renew them
 *    (bench/scaleout-polls.ts);
 *  - wal: WAL pages one SQLite ingest commit writes (keys, block touches), in this process
 *    (bench/wal.ts);
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
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkpointPart } from "./checkpoint.js";
import { fleetPart, searchPart } from "./fleet.js";
import { scrapePart } from "./scrape.js";
import { machine } from "./lib.js";
import { ingestPart } from "./scaleout-ingest.js";
import { pollsPart } from "./scaleout-polls.js";
import { ADMIN } from "./scaleout-servers.js";
import { walPart } from "./wal.js";

const PARTS = (process.env.BENCH_SCALEOUT ?? "ingest,polls").split(",");
const FLEET = (process.env.BENCH_FLEET ?? "sqlite:10000,pg2:10000").split(",").filter(Boolean);

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
