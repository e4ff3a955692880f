/**
 * `npm run bench -- leases`: what the durable callback outbox costs on PostgreSQL (docs/scaling-leases.md).
 * The ingest commit of 64 readings (64 devices) with a callback on none of the devices
 * (the baseline) against the same with a callback on every device (64 outbox rows written in the
 * transaction), rounds interleaved; then the outbox's own bookkeeping per delivery (lease, remove),
 * without HTTP; then the durable rule evaluation: the same commit with every device watched by a
 * rule (64 `rule_evals` rows written in the transaction, leased to this instance) and the consume
 * of each batch's rows (nothing fired; one firing: its job inserted in the same transaction).
 * Needs the PostgreSQL of the tests (BLOCKKIT_TEST_PG / DATABASE_URL / 127.0.0.1:5432).
 */
import pg from "pg";
import { openStore } from "../server/store/index.js";
import type { IngestEvent, Store } from "../server/store/types.js";
import { figure, machine, median } from "./lib.js";

const PG_URL = process.env.BLOCKKIT_TEST_PG ?? process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const COMMITS = Number(process.env.BENCH_COMMITS ?? 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DEVICES = 64;


const LEASE = { lease: "bench", leaseMs: 600_000 };

async function commits(store: Store, userId: number, prefix: string, from: number, n: number, evaluate = false, evals: number[][] = []): Promise<number> {
  const batch = (t: number): IngestEvent[] =>
    Array.from({ length: DEVICES }, (_, i) => {
      const node = `${prefix}${String(i).padStart(6, "0")}`;
      return { kind: "data", userId, node, guid: `${node}_0_0_9`, G: "0", V: 0, D: 9, DA: String(t), num: t, ts: 1_800_000_000_000 + t, evaluate };
    });
  const start = process.hrtime.bigint();
  for (let t = from; t < from + n; t++) {
    const results = await store.events.commit(batch(t), evaluate ? LEASE : undefined);
    if (evaluate) evals.push(results.map((r) => r.evaluation as number));
  }
  return Number(process.hrtime.bigint() - start) / 1e6 / n;
}

/** Consumes each batch's evaluation rows; every `fireEvery`th batch fires the rule (0: never). */
async function consume(store: Store, evals: number[][], ruleId: number, fireEvery: number): Promise<number> {
  const repo = store.ruleEvals as NonNullable<Store["ruleEvals"]>;
  const jobs = store.ruleJobs as NonNullable<Store["ruleJobs"]>;
  const start = process.hrtime.bigint();
  for (let i = 0; i < evals.length; i++) {
    const fire = fireEvery > 0 && i % fireEvery === 0;
    const out = await repo.consume(LEASE.lease, evals[i] as number[], fire ? [{ ruleId, firedAt: Date.now(), timeoutMs: 0, cause: [] }] : [], LEASE.leaseMs);
    if (fire && typeof out?.[0] === "number") await jobs.finish(out[0]);
  }
  return Number(process.hrtime.bigint() - start) / 1e6 / evals.length;
}

async function main(): Promise<void> {
  process.stdout.write(`${machine()}\n`);
  const schema = `bk_bench_leases_${process.pid}`;
  const u = new URL(PG_URL);
  u.searchParams.set("schema", schema);
  const store = await openStore(u.toString(), { poolSize: 4 });
  try {
    const userId = (await store.users.create("bench", null, Date.now())).id;
    // Two sets of 64 devices: one without callbacks, one with a callback on each.
    const ids = await store.events.commit(
      Array.from({ length: DEVICES }, (_, i) => {
        const node = `WITHCB${String(i).padStart(6, "0")}`;
        return { kind: "data", userId, node, guid: `${node}_0_0_9`, G: "0", V: 0, D: 9, DA: "0", num: 0, ts: 1_800_000_000_000 };
      }),
    );
    for (const r of ids) await store.callbacks.set({ device_id: r.deviceId, url: "http://127.0.0.1:9/bench", secret: "s", created: Date.now() });
    await commits(store, userId, "NOCB", 1, 50);
    await commits(store, userId, "WITHCB", 1, 50);
    const without: number[] = [];
    const withCb: number[] = [];
    let t = 100;
    for (let r = 0; r < ROUNDS; r++, t += COMMITS) {
      without.push(await commits(store, userId, "NOCB", t, COMMITS));
      withCb.push(await commits(store, userId, "WITHCB", t, COMMITS));
    }
    const base = { name: "no callbacks", value: median(without) };
    figure(`commit of ${DEVICES} readings, no callbacks (median of ${ROUNDS} rounds of ${COMMITS})`, base.value, "ms");
    figure(`commit of ${DEVICES} readings, a callback on every device (${DEVICES} outbox rows)`, median(withCb), "ms", base);
    // The outbox's bookkeeping per delivery: lease the heads (one per device), remove them (one statement per claim, as the feeder removes what finished between two claims).
    const outbox = store.outbox;
    const depth = await outbox.depth();
    const start = process.hrtime.bigint();
    let done = 0;
    for (;;) {
      const rows = await outbox.claim("bench", Date.now(), 10_000, 256, 1_000, []);
      if (rows.length === 0) break;
      await outbox.remove(rows.map((row) => row.id));
      done += rows.length;
    }
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    figure(`outbox lease + remove, ${done} of ${depth} deliveries (no HTTP)`, (ms * 1000) / done, "µs per delivery");
    // Durable rule evaluation: every device watched (64 rows per commit), then each batch consumed.
    const ruleId = (await store.rules.create({ user_id: userId, short_name: "bench", preconditions: [], actions: [], timeout: 0, suspended: false, created: Date.now() })).id;
    await commits(store, userId, "EVAL", 1, 50, true);
    await consume(store, [], ruleId, 0);
    const watched: number[] = [];
    const plain: number[] = [];
    const idle: number[] = [];
    const firing: number[] = [];
    for (let r = 0; r < ROUNDS; r++, t += COMMITS) {
      plain.push(await commits(store, userId, "NOCB", t, COMMITS));
      const evals: number[][] = [];
      watched.push(await commits(store, userId, "EVAL", t, COMMITS, true, evals));
      idle.push(await consume(store, evals.slice(0, COMMITS / 2), ruleId, 0));
      firing.push(await consume(store, evals.slice(COMMITS / 2), ruleId, 1));
    }
    const base2 = { name: "no rules", value: median(plain) };
    figure(`commit of ${DEVICES} readings, no rules (median of ${ROUNDS} rounds of ${COMMITS})`, base2.value, "ms");
    figure(`commit of ${DEVICES} readings, every device watched by a rule (${DEVICES} rule_evals rows)`, median(watched), "ms", base2);
    figure(`consume of a batch's ${DEVICES} evaluations, nothing fired (one DELETE)`, median(idle), "ms");
    figure(`consume of a batch's ${DEVICES} evaluations with one firing (transaction: DELETE, job INSERT; job removed after)`, median(firing), "ms");
  } finally {
    await store.close();
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await c.end();
  }
}

await main();
