/**
 * `BENCH_SCALEOUT=checkpoint`: what the SQLite ingest thread spends per reading of a 10,000-block
 * fleet, with the WAL checkpointed every 1,000 pages (SQLite's default, main before) and every
 * WAL_AUTOCHECKPOINT_PAGES, alternated (BENCH_CHECKPOINT_ROUNDS, default 2). The ingest transaction
 * as the thread runs it, on this process's main thread: synchronous=NORMAL, an fdatasync of the
 * WAL after each commit, the staged rows moved when due; batches of BENCH_CHECKPOINT_BATCH
 * (default 128) readings from random blocks, each with an idempotency key, one in ten touching its
 * block. CPU per reading, and wall time per reading in the statements and COMMIT (autocheckpoints
 * included), the flush and the moves.
 */
import { closeSync, fdatasyncSync, openSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { ingestTransaction } from "../server/store/sqlite/devices.js";
import { openSqliteStore } from "../server/store/sqlite/index.js";
import { ReadingsStaging, WAL_AUTOCHECKPOINT_PAGES } from "../server/store/sqlite/staging.js";
import type { IngestEvent } from "../server/store/types.js";
import { figure, median } from "./lib.js";

const BLOCKS = 10_000;
const BATCH = Number(process.env.BENCH_CHECKPOINT_BATCH ?? 128);
const READINGS = Number(process.env.BENCH_CHECKPOINT_READINGS ?? 40_000);
const ROUNDS = Number(process.env.BENCH_CHECKPOINT_ROUNDS ?? 2);

interface Cost {
  cpu: number;
  statements: number;
  flush: number;
  move: number;
}

async function measure(dir: string, pages: number): Promise<Cost> {
  const store = openSqliteStore({ dataDir: dir, ingestThread: false });
  store.db.prepare("INSERT INTO users (id, name, created) VALUES (1, 'u', 0)").run();
  await store.close();
  const file = join(dir, "blockkit.db");
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma(`wal_autocheckpoint = ${pages}`);
  const staging = new ReadingsStaging(db, { manual: true });
  const ingest = ingestTransaction(db, staging, null);
  const node = (i: number): string => `CKPT${String(i).padStart(8, "0")}`;
  const seq = new Array<number>(BLOCKS).fill(0);
  let ts = Date.now();
  const event = (i: number, touch: boolean): IngestEvent => ({
    kind: "data", userId: 1, node: node(i), guid: `${node(i)}_1_0_9`, G: "1", V: 0, D: 9, DA: "21.5", num: 21.5, ts,
    key: `k${i}.${(seq[i] = (seq[i] ?? 0) + 1).toString(36)}`, ...(touch ? { touch: ts } : {}),
  });
  for (let i = 0; i < BLOCKS; i += 1000) ingest.commit(Array.from({ length: 1000 }, (_, j) => event(i + j, true)), ts);
  const wal = openSync(`${file}-wal`, "r");
  const run = (n: number): Cost => {
    const t = { statements: 0, flush: 0, move: 0 };
    const c0 = process.cpuUsage();
    for (let done = 0; done < n; done += BATCH) {
      ts += 1;
      const batch = Array.from({ length: BATCH }, () => event(Math.floor(Math.random() * BLOCKS), Math.random() < 0.1));
      const a = performance.now();
      ingest.commit(batch, ts);
      const b = performance.now();
      fdatasyncSync(wal);
      const c = performance.now();
      staging.moveIfDue(Date.now());
      t.statements += b - a;
      t.flush += c - b;
      t.move += performance.now() - c;
    }
    const cpu = process.cpuUsage(c0);
    return { cpu: (cpu.user + cpu.system) / n, statements: (1000 * t.statements) / n, flush: (1000 * t.flush) / n, move: (1000 * t.move) / n };
  };
  try {
    run(READINGS / 4); // warm-up: keys and staged rows of a running fleet
    return run(READINGS);
  } finally {
    closeSync(wal);
    staging.close();
    db.close();
  }
}

export async function checkpointPart(dir: string): Promise<void> {
  process.stdout.write(`\nSQLite ingest thread per reading, ${BLOCKS} blocks, batches of ${BATCH}, ${READINGS} readings a round, ${ROUNDS} rounds alternated (µs):\n`);
  const costs = new Map<number, Cost[]>([[1000, []], [WAL_AUTOCHECKPOINT_PAGES, []]]);
  for (let r = 0; r < ROUNDS; r++) {
    for (const pages of costs.keys()) {
      const c = await measure(join(dir, `ckpt-${pages}-${r}`), pages);
      costs.get(pages)?.push(c);
      process.stdout.write(`  round ${r + 1}, checkpoint every ${pages} pages: CPU ${c.cpu.toFixed(1)}, statements + COMMIT ${c.statements.toFixed(1)}, flush ${c.flush.toFixed(1)}, moves ${c.move.toFixed(1)}\n`);
    }
  }
  const base = costs.get(1000) as Cost[];
  const now = costs.get(WAL_AUTOCHECKPOINT_PAGES) as Cost[];
  for (const k of ["cpu", "statements", "flush", "move"] as const) {
    figure(`  ${k === "cpu" ? "CPU" : k} per reading, median, checkpoint every ${WAL_AUTOCHECKPOINT_PAGES} pages`, median(now.map((c) => c[k])), "µs", { name: "every 1,000 pages", value: median(base.map((c) => c[k])) });
  }
}
