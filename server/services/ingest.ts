/**
 * Group commit of block events. Events submitted while the event loop is busy are committed in one
 * durable transaction on the next turn; each submitter's promise settles only after its events are
 * on disk. Commits are pipelined: the next turn's batch goes to the store while the previous one
 * waits for its flush. The SQLite store commits on its ingest thread, which merges the batches that
 * arrive while it flushes into one transaction and one flush, so the event loop never waits for
 * the disk and the disk never waits for the event loop. Listeners (rules, callbacks) hear about
 * committed events after the flush, in commit order, off the request's path.
 */
import type { Logger } from "pino";
import { unavailable } from "../errors.js";
import type { EvaluationLease, IngestEvent, IngestResult, MetaPatch, Store } from "../store/types.js";

/** What a config event does to its device's meta (DESIGN.md "Config events"). */
export function configPatch(e: IngestEvent): MetaPatch {
  if (e.DA === "UNPLUG") return { path: ["plugged"], value: false };
  if (e.DA === "PLUGIN") return { path: ["plugged"], value: true };
  return { path: ["config", e.DA], value: { payload: e.payload ?? {}, timestamp: e.ts } };
}

/**
 * A block's activity (last_active) is recorded at most every 10 s: a block posting once a second or
 * faster is touched once per 10 s. Each touch rewrites the block's row, and in a batch of events from
 * many blocks each row is a page of its own: on SQLite, touching every second added 47 WAL pages (of
 * 162) to a commit of 60 readings from 60 of 10,000 blocks (docs/scaling-measured.md, "What one SQLite commit writes").
 */
export const TOUCH_EVERY_MS = 10_000;
const MAX_TOUCHED = 200_000;

export interface CommittedEvent extends IngestEvent {
  deviceId: number;
  created: boolean;
  /** A callback delivery of this event waits in the store's outbox (PostgreSQL). */
  outboxed?: boolean;
  /** PostgreSQL: the device's value before this reading as committed (IngestResult.prev), or stale. */
  prev?: string | null;
  stale?: boolean;
  /** PostgreSQL: its row in `rule_evals`, leased to this instance (IngestResult.evaluation). */
  evaluation?: number;
}

/**
 * Durable rule evaluation (the rule engine, on a store with rule jobs): the readings of the devices
 * it watches are written to the store's evaluation outbox in their own transaction, leased here.
 */
export interface Evaluation extends EvaluationLease {
  watches(e: IngestEvent): boolean;
}

export type CommitListener = (events: CommittedEvent[]) => void;

interface Pending {
  events: IngestEvent[];
  resolve: (r: IngestResult[]) => void;
  reject: (e: unknown) => void;
}

/** How long idempotency keys are remembered by default: 7 days. */
export const KEY_RETENTION_MS = 7 * 86_400_000;
/**
 * The shortest key retention allowed: 1 hour. A gateway (and the simulator) sends a request again
 * after a lost answer within its backoff cap of 2 min plus the 15 s timeout of the request, so an
 * hour covers that retry window many times over; only an outage longer than the retention that
 * starts between a commit and its answer gets a reading stored twice (docs/operations.md).
 */
export const MIN_KEY_RETENTION_MS = 3_600_000;
const PRUNE_EVERY_MS = 3_600_000;

export interface IngestOptions {
  /** Largest number of events in one transaction. Default 5000. */
  maxBatch?: number;
  /** How long idempotency keys are remembered, in ms: at least MIN_KEY_RETENTION_MS. Default 7 days. */
  keyRetentionMs?: number;
  /** The time for pruning (tests). Default Date.now. */
  clock?: () => number;
}

export class Ingest {
  private queue: Pending[] = [];
  private queued = 0;
  private scheduled = false;
  /** Batches committed and waiting for their flush. */
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;
  private readonly listeners: CommitListener[] = [];
  private evaluation: Evaluation | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private pruning: Promise<unknown> | null = null;
  /** Aborted by stop(): a prune running (a long one after the retention was lowered) ends after its current batch. */
  private readonly pruneStop = new AbortController();
  private readonly maxBatch: number;
  private readonly keyRetentionMs: number;
  private readonly clock: () => number;
  /** node id -> the last_active last written for it. */
  private readonly touched = new Map<string, number>();
  /** Counters for /metrics and tests. */
  readonly stats = { batches: 0, events: 0, duplicates: 0, failedBatches: 0 };
  /** Told the time of each batch commit, seconds (metrics). */
  observeCommit: ((seconds: number) => void) | undefined;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    options: IngestOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 5000;
    this.keyRetentionMs = options.keyRetentionMs ?? KEY_RETENTION_MS;
    if (!Number.isFinite(this.keyRetentionMs) || this.keyRetentionMs < MIN_KEY_RETENTION_MS) {
      throw new RangeError(`idempotency key retention: ${this.keyRetentionMs} ms is under the 1 h minimum`);
    }
    this.clock = options.clock ?? Date.now;
  }

  /**
   * Prunes the keys at start (a server down for a while has some to forget) and then every hour.
   * A stop does not wait for the prune, only for its current batch: the next start goes on with it.
   */
  start(): void {
    const prune = (): void => {
      if (this.pruning || this.stopped) return;
      this.pruning = this.pruneKeys(this.pruneStop.signal)
        .catch((err: unknown) => this.log.warn({ err }, "pruning idempotency keys failed"))
        .finally(() => (this.pruning = null));
    };
    prune();
    this.pruneTimer = setInterval(prune, PRUNE_EVERY_MS);
    this.pruneTimer.unref();
  }

  /**
   * Forgets the idempotency keys first seen more than the retention ago, in batches; stops between
   * two once `signal` is aborted. Returns how many.
   */
  async pruneKeys(signal?: AbortSignal): Promise<number> {
    const n = await this.store.events.pruneKeys(this.clock() - this.keyRetentionMs, signal);
    if (signal?.aborted) this.log.info({ keys: n }, "idempotency keys pruning stopped: the rest at the next start");
    else if (n > 0) this.log.info({ keys: n }, "idempotency keys pruned");
    return n;
  }

  /** Stops accepting events and waits until everything accepted is committed. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.pruneStop.abort();
    this.drain();
    await Promise.all([...this.inFlight, this.pruning]);
  }

  /** Forgets a removed block's activity, so that its next event records it again at once. */
  forgetBlock(nodeId: string): void {
    this.touched.delete(nodeId);
  }

  /** Durable rule evaluation (see Evaluation). */
  evaluateWith(evaluation: Evaluation): void {
    this.evaluation = evaluation;
  }

  onCommitted(listener: CommitListener): void {
    this.listeners.push(listener);
  }

  submit(events: IngestEvent[]): Promise<IngestResult[]> {
    if (this.stopped) return Promise.reject(unavailable("the server is shutting down"));
    return new Promise((resolve, reject) => {
      this.queue.push({ events, resolve, reject });
      this.queued += events.length;
      if (this.scheduled) return;
      this.scheduled = true;
      // One turn of the event loop gathers every request parsed meanwhile into one transaction.
      setImmediate(() => {
        this.scheduled = false;
        this.drain();
      });
    });
  }

  /** Commits everything queued, in batches of at most maxBatch events, without waiting for flushes. */
  private drain(): void {
    while (this.queue.length > 0) {
      const taken: Pending[] = [];
      let count = 0;
      while (this.queue.length > 0) {
        const next = this.queue[0] as Pending;
        if (count > 0 && count + next.events.length > this.maxBatch) break;
        this.queue.shift();
        taken.push(next);
        count += next.events.length;
      }
      this.queued -= count;
      const done = this.commit(taken, count);
      this.inFlight.add(done);
      void done.finally(() => this.inFlight.delete(done));
    }
  }

  private async commit(taken: Pending[], count: number): Promise<void> {
    const batch: IngestEvent[] = [];
    for (const p of taken) for (const e of p.events) batch.push(e);
    const touched = this.decide(batch, Date.now());
    let results: IngestResult[];
    const t0 = performance.now();
    try {
      results = await this.store.events.commit(batch, this.evaluation);
      this.observeCommit?.((performance.now() - t0) / 1000);
    } catch (err) {
      this.stats.failedBatches++;
      for (const node of touched) this.touched.delete(node); // the touches of a rolled-back batch did not happen
      this.log.error({ err, events: count }, "committing block events failed");
      const e = unavailable("the store could not commit the events; retry", err);
      for (const p of taken) p.reject(e);
      return;
    }
    this.stats.batches++;
    const committed: CommittedEvent[] = [];
    let i = 0;
    for (const p of taken) {
      const mine = results.slice(i, i + p.events.length);
      i += p.events.length;
      p.resolve(mine);
    }
    batch.forEach((e, j) => {
      const r = results[j] as IngestResult;
      if (r.duplicate) {
        this.stats.duplicates++;
        return;
      }
      // The event objects are this service's own from here on: completed in place, not copied.
      const c = e as CommittedEvent;
      c.deviceId = r.deviceId;
      c.created = r.created;
      if (r.outboxed) c.outboxed = true;
      if (r.prev !== undefined) c.prev = r.prev;
      if (r.stale) c.stale = true;
      if (r.evaluation !== undefined) c.evaluation = r.evaluation;
      committed.push(c);
    });
    this.stats.events += committed.length;
    if (committed.length === 0) return;
    for (const listener of this.listeners) {
      try {
        listener(committed);
      } catch (err) {
        this.log.error({ err }, "a commit listener failed");
      }
    }
  }

  /**
   * The domain decisions the store applies: each config event's meta patch, and the block activity
   * to record (on the first event of each node not touched within TOUCH_EVERY_MS). Returns the
   * nodes touched. A node's later events in the same batch find it touched at `now`, so one map
   * lookup per event does (there were three, with a set of the batch's nodes: this loop was 5 % of
   * the event loop's time in a profile at 5,000 blocks × 1/s).
   */
  private decide(batch: IngestEvent[], now: number): string[] {
    const touched: string[] = [];
    const ev = this.evaluation;
    for (const e of batch) {
      if (ev && e.kind !== "config" && ev.watches(e)) e.evaluate = true;
      if (e.kind === "config") {
        e.meta = configPatch(e);
        // An UNPLUG for a device never seen creates nothing (V12_1.00 firmware sends one for each
        // empty port at boot).
        if (e.DA === "UNPLUG") e.existingOnly = true;
      }
      const last = this.touched.get(e.node);
      if (last !== undefined && now - last < TOUCH_EVERY_MS) continue;
      if (this.touched.size >= MAX_TOUCHED) this.touched.clear();
      this.touched.set(e.node, now);
      e.touch = now;
      touched.push(e.node);
    }
    return touched;
  }

  get depth(): number {
    return this.queued;
  }
}
