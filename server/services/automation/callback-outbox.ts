/**
 * The durable side of callback delivery, on both stores: deliveries are rows of the store's outbox,
 * written in the transaction of their event, so a committed event's delivery outlives the process
 * (and, on PostgreSQL, the instance) that committed it. The feeder leases due deliveries (the head
 * of each device's queue, a few per user) to this process and hands them to the dispatcher's fair
 * queues; the dispatcher removes a delivered one and puts a failed one back with its next time,
 * for any instance to retry; the feeder wakes at that time. Leases of deliveries held here are
 * renewed every third of the lease; an instance that dies stops renewing, and another instance
 * takes its deliveries once their leases lapse (a restarted SQLite server at once). At least once:
 * the same X-Blockkit-Delivery on every attempt lets a receiver drop a repeat.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { CallbackOutbox, OutboxDelivery } from "../../store/types.js";
import { OverBoundsLog, type TrimCounts } from "./over-bounds-log.js";

export interface FeederHooks {
  /** Users with no free attempt slot here (not claimed for). */
  busy(): number[];
  /** Outbox ids held here (waiting for a slot or in flight). */
  held(): number[];
  /** Deliveries this instance may still take. */
  room(): number;
  /** Deliveries in the outbox as this process knows them (its last count, kept up to date). */
  waiting(): number;
  take(rows: OutboxDelivery[]): void;
  /** A trim dropped deliveries (the feeder logs it: over-bounds-log.ts). */
  trimmed(counts: TrimCounts): void;
  /** The outbox's depth, counted after a trim. */
  counted(depth: number): void;
  /** A claim was made (rows taken or not). */
  cycled(): void;
}

export interface FeederOptions {
  leaseMs: number;
  perUser: number;
  bounds: { perDevice: number; perUser: number; total: number };
  clock: () => number;
}

/** Leases taken per claim at most. */
const CLAIM_BATCH = 256;
/** Bounds are applied (oldest kept, newest dropped) at least this often, ms. */
const TRIM_EVERY_MS = 2000;
/** ... and this often while more deliveries may wait than the smallest bound allows, ms. */
const TRIM_SOON_MS = 200;

export class OutboxFeeder {
  /** This instance's lease token. */
  readonly lease = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  /** A wake at the earliest retry made here (`dueAt`). */
  private dueTimer: NodeJS.Timeout | undefined;
  private dueAt = Number.POSITIVE_INFINITY;
  /** Deliveries finished here, removed from the outbox at the next cycle, before its claim. */
  private finished: number[] = [];
  private running: Promise<void> | null = null;
  /** A cycle asked for in this turn of the event loop, run at its end (setImmediate). */
  private soon: NodeJS.Immediate | undefined;
  private again = false;
  private stopped = false;
  private lastTrim = 0;
  private lastError = 0;
  private readonly overBounds: OverBoundsLog;

  constructor(
    private readonly outbox: CallbackOutbox,
    private readonly hooks: FeederHooks,
    private readonly log: Logger,
    private readonly o: FeederOptions,
  ) {
    this.overBounds = new OverBoundsLog(log);
  }

  /** Polls for due retries and lapsed leases (other instances' lost work) twice a lease, at most once a second. */
  start(): void {
    const every = Math.min(1000, Math.max(50, this.o.leaseMs / 2));
    this.timer = setInterval(() => this.wake(), every);
    this.timer.unref();
    this.renewTimer = setInterval(() => this.renew(), Math.max(50, this.o.leaseMs / 3));
    this.renewTimer.unref();
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearInterval(this.renewTimer);
    clearTimeout(this.dueTimer);
    clearImmediate(this.soon);
    await this.running;
    await this.removeFinished();
  }

  /** Lets any instance lease these deliveries at once (a clean stop). */
  release(ids: number[]): Promise<void> {
    return this.outbox.renew(this.lease, ids, 0, 0).catch((err: unknown) => this.failed(err, "releasing callback deliveries failed"));
  }

  /**
   * Claims soon (an event with a delivery committed here, a delivery finished): at the end of this
   * turn of the event loop, so that what finishes in one turn shares one removal and one claim;
   * after the cycle running, if one is.
   */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.soon ??= setImmediate(() => {
      this.soon = undefined;
      if (this.stopped) return;
      if (this.running) {
        this.again = true;
        return;
      }
      this.running = this.cycle().finally(() => {
        this.running = null;
      });
    });
  }

  /**
   * A delivery answered, or given up: removed from the outbox with the others finished meanwhile,
   * at the next cycle (the caller wakes it). It stays leased here until then, so nobody sends it
   * again unless this process dies before (at least once).
   */
  done(id: number): void {
    this.finished.push(id);
  }

  /** A failed attempt: back in the outbox, due at `nextAt`, for any instance; this one wakes then. */
  async retry(id: number, attempts: number, nextAt: number): Promise<void> {
    try {
      await this.outbox.retry(id, this.lease, attempts, nextAt);
    } catch (err) {
      this.failed(err, "recording a callback retry failed");
      return;
    }
    this.wakeAt(nextAt);
  }

  private wakeAt(at: number): void {
    if (this.stopped || at >= this.dueAt) return;
    clearTimeout(this.dueTimer);
    this.dueAt = at;
    this.dueTimer = setTimeout(() => {
      this.dueAt = Number.POSITIVE_INFINITY;
      this.wake();
    }, Math.max(0, at - this.o.clock()));
    this.dueTimer.unref();
  }

  private async removeFinished(): Promise<void> {
    if (this.finished.length === 0) return;
    const ids = this.finished;
    this.finished = [];
    await this.outbox.remove(ids).catch((err: unknown) => this.failed(err, "removing delivered callbacks failed (they will be sent again)"));
  }

  /** Whether the bounds are due to be applied now. */
  private trimDue(now: number): boolean {
    const since = now - this.lastTrim;
    if (since >= TRIM_EVERY_MS) return true;
    const b = this.o.bounds;
    return since >= TRIM_SOON_MS && this.hooks.waiting() > Math.min(b.perDevice, b.perUser, b.total);
  }

  private async cycle(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.removeFinished();
        const now = this.o.clock();
        if (this.trimDue(now)) {
          this.lastTrim = now;
          const b = this.o.bounds;
          const counts = await this.outbox.trim(b.perDevice, b.perUser, b.total, now);
          if (counts.device + counts.user + counts.total > 0) this.hooks.trimmed(counts);
          this.overBounds.trimmed(counts, now);
          this.hooks.counted(await this.outbox.depth());
        }
        const room = Math.min(CLAIM_BATCH, this.hooks.room());
        if (room <= 0 || this.stopped) continue;
        const rows = await this.outbox.claim(this.lease, this.o.clock(), this.o.leaseMs, room, this.o.perUser, this.hooks.busy());
        if (rows.length === 0) continue;
        // Stopped meanwhile: what was just leased goes back at once, as what is held (a clean stop).
        if (this.stopped) await this.release(rows.map((r) => r.id));
        else this.hooks.take(rows);
      } catch (err) {
        this.failed(err, "claiming callback deliveries failed");
        return;
      } finally {
        this.hooks.cycled();
      }
    } while (this.again && !this.stopped);
  }

  private renew(): void {
    const ids = this.hooks.held();
    if (ids.length === 0 || this.stopped) return;
    this.outbox.renew(this.lease, ids, this.o.clock(), this.o.leaseMs).catch((err: unknown) => this.failed(err, "renewing callback leases failed"));
  }

  private failed(err: unknown, message: string): void {
    const now = Date.now();
    if (now - this.lastError < 10_000) return;
    this.lastError = now;
    this.log.warn({ err }, message);
  }
}
