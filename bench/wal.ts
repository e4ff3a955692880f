/**
 * `BENCH_SCALEOUT=wal`, in this process: the WAL pages one SQLite ingest commit writes. Apart from
 * bench/scaleout.bench.ts, which picks the parts to run; it needs no server.
 */
import { join } from "node:path";
import { figure } from "./lib.js";

/**
 * What one SQLite ingest commit writes: WAL pages per commit of a batch of readings from distinct
 * blocks of a 10,000-block fleet (one device each), with and without idempotency keys and block
 * touches (automatic checkpoints off, so the WAL only grows). Each distinct row a commit changes is
 * a page; pages are what the ingest thread writes, flushes and later checkpoints.
 */
export async function walPart(dir: string): Promise<void> {
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
