/**
 * Block events on PostgreSQL: group commit. Batches handed over while a transaction runs are merged
 * into the next one (at most MAX_EVENTS events), so a burst costs one COMMIT — and one WAL flush,
 * with `synchronous_commit = on` — per turn of this loop, not per request; each batch's promise
 * settles after its COMMIT returned. Every statement takes arrays (`unnest`), so a transaction sends
 * a fixed number of parameters whatever its size: the 65,535 bind parameters of one statement are
 * never approached. Semantics are the SQLite store's, in batch order: idempotency keys, device
 * creation on first sight, meta patches in order, the last value kept by time, block activity.
 */
import type pg from "pg";
import { unavailable } from "../../errors.js";
import type { EvaluationLease, EventsRepo, IngestEvent, IngestResult } from "../types.js";
import { pgJson, pgText, q, tx } from "./db.js";
import type { ReadingPartitions } from "./partitions.js";

const MAX_EVENTS = 20_000;
const PRUNE_BATCH = 50_000;

interface Waiting {
  batch: IngestEvent[];
  evaluation: EvaluationLease | undefined;
  resolve: (r: IngestResult[]) => void;
  reject: (err: unknown) => void;
}

export class PgEvents implements EventsRepo {
  private readonly waiting: Waiting[] = [];
  private running: Promise<void> | null = null;
  private closed = false;
  /** Counters for tests and the benchmark. */
  readonly stats = { transactions: 0, events: 0 };

  constructor(
    private readonly pool: pg.Pool,
    private readonly partitions: ReadingPartitions,
  ) {}

  commit(batch: IngestEvent[], evaluation?: EvaluationLease): Promise<IngestResult[]> {
    if (this.closed) return Promise.reject(unavailable("the store is closing"));
    if (batch.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.waiting.push({ batch, evaluation, resolve, reject });
      this.running ??= this.loop();
    });
  }

  /**
   * In transactions of at most PRUNE_BATCH keys (through the ts index): a day of keys at 100,000
   * blocks is billions of rows, which one DELETE would hold in one transaction (and, with RETURNING,
   * in this process's memory).
   */
  async pruneKeys(before: number, signal?: AbortSignal): Promise<number> {
    let total = 0;
    for (;;) {
      const r = await this.pool.query(
        `DELETE FROM event_keys WHERE ctid = ANY(ARRAY(SELECT ctid FROM event_keys WHERE ts < $1 LIMIT ${PRUNE_BATCH}))`,
        [before],
      );
      total += r.rowCount ?? 0;
      if ((r.rowCount ?? 0) < PRUNE_BATCH || this.closed || signal?.aborted) return total;
    }
  }

  /** Waits until every batch accepted is committed or failed. */
  async close(): Promise<void> {
    this.closed = true;
    await this.running;
  }

  private async loop(): Promise<void> {
    while (this.waiting.length > 0) {
      const taken: Waiting[] = [];
      let n = 0;
      while (this.waiting.length > 0 && (n === 0 || n + (this.waiting[0] as Waiting).batch.length <= MAX_EVENTS)) {
        const w = this.waiting.shift() as Waiting;
        taken.push(w);
        n += w.batch.length;
      }
      const all = taken.flatMap((w) => w.batch);
      try {
        const results = await this.apply(all, Date.now(), taken.find((w) => w.evaluation)?.evaluation);
        this.stats.transactions++;
        this.stats.events += all.length;
        let i = 0;
        for (const w of taken) {
          w.resolve(results.slice(i, i + w.batch.length));
          i += w.batch.length;
        }
      } catch (err) {
        // A partition this instance took as made was dropped by another one (retention, an interval
        // change): look again before the next batch instead of failing until the next hourly check.
        if ((err as { code?: string }).code === "23514" && /no partition/.test((err as Error).message)) this.partitions.forget();
        for (const w of taken) w.reject(err);
      }
    }
    this.running = null;
  }

  private async apply(batch: IngestEvent[], now: number, evaluation: EvaluationLease | undefined): Promise<IngestResult[]> {
    const isReading = (e: IngestEvent): boolean => e.meta === undefined && e.kind !== "config";
    await this.partitions.ensureFor(batch.filter(isReading).map((e) => e.ts));
    return tx(this.pool, async (c) => {
      // Block activity, one row per node (the latest), in node order (locks taken in one order).
      const touches = new Map<string, { userId: number; at: number }>();
      for (const e of batch) {
        if (e.touch === undefined) continue;
        const t = touches.get(e.node);
        if (!t || t.at < e.touch) touches.set(e.node, { userId: e.userId, at: e.touch });
      }
      if (touches.size > 0) {
        const nodes = [...touches.keys()].sort();
        await q(
          c,
          `INSERT INTO blocks (node_id, user_id, short_name, date_created, last_active)
           SELECT n, u, n, t, t FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS x(n, u, t)
           ON CONFLICT (node_id) DO UPDATE SET last_active = greatest(blocks.last_active, excluded.last_active)`,
          [nodes, nodes.map((n) => touches.get(n)?.userId), nodes.map((n) => touches.get(n)?.at)],
          "events.touch",
        );
      }
      // Idempotency keys: the first event of a new key is kept, every other one is a duplicate.
      const duplicate = new Array<boolean>(batch.length).fill(false);
      const keyed = batch.map((e, i) => [e, i] as const).filter(([e]) => e.key !== undefined);
      if (keyed.length > 0) {
        const fresh = new Set(
          (
            await q<{ node_id: string; key: string }>(
              c,
              `INSERT INTO event_keys (node_id, key, ts) SELECT n, k, $3 FROM unnest($1::text[], $2::text[]) AS x(n, k)
               ON CONFLICT DO NOTHING RETURNING node_id, key`,
              [keyed.map(([e]) => e.node), keyed.map(([e]) => pgText(e.key as string)), now],
              "events.keys",
            )
          ).map((r) => `${r.node_id}\n${r.key}`),
        );
        for (const [e, i] of keyed) {
          const k = `${e.node}\n${pgText(e.key as string)}`;
          if (fresh.has(k)) fresh.delete(k);
          else duplicate[i] = true;
        }
      }
      // Devices: look up, then create the missing ones in one statement (GUID order). Locked (GUID
      // order), so that each device's last value read here is the one committed just before this
      // transaction's: every event's previous value, as rules on any instance must see it.
      const guids = [...new Set(batch.filter((_, i) => !duplicate[i]).map((e) => e.guid))].sort();
      const ids = new Map<string, number>();
      const latest = new Map<number, { da: string | null; ts: number }>();
      if (guids.length > 0) {
        for (const r of await q<{ id: number; guid: string; last_da: string | null; last_ts: number | null }>(
          c,
          "SELECT id, guid, last_da, last_ts FROM devices WHERE guid = ANY($1::text[]) ORDER BY guid FOR UPDATE",
          [guids],
          "events.devices",
        )) {
          ids.set(r.guid, r.id);
          if (r.last_ts !== null) latest.set(r.id, { da: r.last_da, ts: r.last_ts });
        }
      }
      const creators = new Map<string, IngestEvent>();
      const createdBy = new Array<boolean>(batch.length).fill(false);
      batch.forEach((e, i) => {
        if (duplicate[i] || ids.has(e.guid) || creators.has(e.guid)) return;
        if (e.existingOnly) {
          duplicate[i] = true; // nothing is created: answered like a duplicate
          return;
        }
        creators.set(e.guid, e);
        createdBy[i] = true;
      });
      if (creators.size > 0) {
        const list = [...creators.values()].sort((a, b) => (a.guid < b.guid ? -1 : a.guid > b.guid ? 1 : 0));
        const made = await q<{ id: number; guid: string }>(
          c,
          `INSERT INTO devices (guid, user_id, node_id, g, v, d, created)
           SELECT guid, u, n, g, v, d, $7 FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::int[], $6::int[]) AS x(guid, u, n, g, v, d)
           ON CONFLICT (guid) DO NOTHING RETURNING id, guid`,
          [list.map((e) => e.guid), list.map((e) => e.userId), list.map((e) => e.node), list.map((e) => pgText(e.G)), list.map((e) => e.V), list.map((e) => e.D), now],
          "events.create",
        );
        for (const r of made) ids.set(r.guid, r.id);
        const raced = list.filter((e) => !ids.has(e.guid)).map((e) => e.guid);
        if (raced.length > 0) {
          // Another instance created them meanwhile: theirs, not created here.
          for (const r of await q<{ id: number; guid: string }>(c, "SELECT id, guid FROM devices WHERE guid = ANY($1::text[])", [raced])) ids.set(r.guid, r.id);
          const racedSet = new Set(raced);
          batch.forEach((e, i) => {
            if (createdBy[i] && racedSet.has(e.guid)) createdBy[i] = false;
          });
        }
      }
      // Meta patches, in batch order.
      for (let i = 0; i < batch.length; i++) {
        const e = batch[i] as IngestEvent;
        if (duplicate[i] || !e.meta) continue;
        await q(c, "UPDATE devices SET meta = blockkit_meta_set(meta, $2::text[], $3::jsonb) WHERE id = $1", [ids.get(e.guid), e.meta.path.map(pgText), pgJson(e.meta.value)], "events.meta");
      }
      // Readings and each device's last value (the latest by time; the later event on a tie).
      const rIds: number[] = [];
      const rTs: number[] = [];
      const rNum: (number | null)[] = [];
      const rDa: string[] = [];
      const last = new Map<number, IngestEvent>();
      const outboxed = new Set<number>();
      // The readings whose rules are to be evaluated (not stale), their rows in rule_evals.
      const evaluated: number[] = [];
      const evaluations = new Array<number | undefined>(batch.length);
      // Each reading's previous value in commit order, or stale (older than the device's latest).
      const prev = new Array<string | null | undefined>(batch.length);
      batch.forEach((e, i) => {
        if (duplicate[i] || !isReading(e)) return;
        const id = ids.get(e.guid) as number;
        const before = latest.get(id);
        if (before && e.ts < before.ts) prev[i] = undefined;
        else {
          prev[i] = before?.da ?? null;
          latest.set(id, { da: pgText(e.DA), ts: e.ts });
          if (e.evaluate && evaluation) evaluated.push(i);
        }
        rIds.push(id);
        rTs.push(e.ts);
        rNum.push(e.num);
        rDa.push(pgText(e.DA));
        const l = last.get(id);
        if (!l || l.ts <= e.ts) last.set(id, e);
      });
      if (last.size > 0) {
        const order = [...last.keys()].sort((a, b) => a - b);
        await q(
          c,
          `UPDATE devices SET last_da = x.da, last_ts = x.ts FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS x(id, da, ts)
           WHERE devices.id = x.id AND (devices.last_ts IS NULL OR devices.last_ts <= x.ts)`,
          [order, order.map((id) => pgText(last.get(id)?.DA ?? "")), order.map((id) => last.get(id)?.ts)],
          "events.last",
        );
        // The callback deliveries of these readings, in the same transaction (a durable outbox:
        // delivered by whichever instance leases them, see callbacks.ts); keyed by the reading's seq.
        // With readings a rule watches, their evaluations too (rule_evals, rules/evaluations.ts),
        // leased to this instance; ids in batch order (one statement numbers its rows in order).
        const readings = `r AS (INSERT INTO readings (device_id, ts, num, da) SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::float8[], $4::text[])
             RETURNING device_id, ts, da, seq),
           o AS (INSERT INTO callback_outbox (id, device_id, user_id, ts, da, next_at)
             SELECT r.seq, r.device_id, d.user_id, r.ts, r.da, $5 FROM r JOIN callbacks cb ON cb.device_id = r.device_id JOIN devices d ON d.id = r.device_id
             RETURNING device_id)`;
        const params: unknown[] = [rIds, rTs, rNum, rDa, now];
        let queued: { device_id: number | null; ev: number | null }[];
        if (evaluated.length === 0 || !evaluation) {
          queued = await q(c, `WITH ${readings} SELECT DISTINCT device_id, NULL::bigint AS ev FROM o`, params, "events.readings");
        } else {
          const at = (f: (e: IngestEvent, i: number) => unknown) => evaluated.map((i) => f(batch[i] as IngestEvent, i));
          queued = await q(
            c,
            `WITH ${readings},
             ev AS (INSERT INTO rule_evals (device_id, user_id, guid, ts, da, prev, cause, lease, lease_until)
               SELECT d, u, g, t, a, p, c::bigint[], $13, $14 FROM unnest($6::bigint[], $7::bigint[], $8::text[], $9::bigint[], $10::text[], $11::text[], $12::text[]) AS x(d, u, g, t, a, p, c)
               RETURNING id)
             SELECT DISTINCT device_id, NULL::bigint AS ev FROM o UNION ALL SELECT NULL, id FROM ev`,
            [
              ...params,
              at((e) => ids.get(e.guid)),
              at((e) => e.userId),
              at((e) => e.guid),
              at((e) => e.ts),
              at((e) => pgText(e.DA)),
              at((_, i) => prev[i]),
              at((e) => `{${(e.cause ?? []).join(",")}}`),
              evaluation.lease,
              now + evaluation.leaseMs,
            ],
            "events.readings+evals",
          );
          const evIds = queued.flatMap((r) => (r.ev === null ? [] : [Number(r.ev)])).sort((a, b) => a - b);
          evaluated.forEach((i, k) => {
            evaluations[i] = evIds[k];
          });
        }
        for (const r of queued) if (r.device_id !== null) outboxed.add(r.device_id);
      }
      return batch.map((e, i) =>
        {
        if (duplicate[i]) return { deviceId: 0, created: false, duplicate: true };
        const deviceId = ids.get(e.guid) as number;
        const r: IngestResult = { deviceId, created: createdBy[i] as boolean, duplicate: false };
        if (outboxed.has(deviceId)) r.outboxed = true;
        if (isReading(e)) {
          const p = prev[i];
          if (p === undefined) r.stale = true;
          else r.prev = p;
          const ev = evaluations[i];
          if (ev !== undefined) r.evaluation = ev;
        }
        return r;
      },
      );
    });
  }
}
