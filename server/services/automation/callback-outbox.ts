/**
 * The durable side of callback delivery (PostgreSQL): deliveries are rows of the store's outbox,
 * written in the transaction of their event, so a committed event's delivery outlives the instance
 * that committed it. The feeder leases due deliveries (the head of each device's queue, a few per
 * user) to this instance and hands them to the dispatcher's fair queues; the dispatcher removes a
 * delivered one and puts a failed one back with its next time, for any instance to retry. Leases of
 * deliveries held here are renewed every third of the lease; an instance that dies stops renewing,
 * and another instance takes its deliveries once their leases lapse (at least once: the same
 * X-Blockkit-Delivery on every attempt lets a receiver drop a repeat).
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { CallbackOutbox, OutboxDelivery } from "../../store/types.js";

export interface FeederHooks {
  /** Users with no free attempt slot here (not claimed for). */
  busy(): number[];
  /** Outbox ids held here (waiting for a slot or in flight). */
  held(): number[];
  /** Deliveries this instance may still take. */
  room(): number;
  take(rows: OutboxDelivery[]): void;
  trimmed(counts: { device: number; user: number; total: number }): void;
}

export interface FeederOptions {
  leaseMs: number;
  perUser: number;
  bounds: { perDevice: number; perUser: number; total: number };
  clock: () => number;
}

/** Leases taken per claim at most. */
const CLAIM_BATCH = 256;
/** Bounds are applied (oldest kept, newest dropped) at most this often, ms. */
const TRIM_EVERY_MS = 2000;

export class OutboxFeeder {
  /** This instance's lease token. */
  readonly lease = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private lastTrim = 0;
  private lastError = 0;

  constructor(
    private readonly outbox: CallbackOutbox,
    private readonly hooks: FeederHooks,
    private readonly log: Logger,
    private readonly o: FeederOptions,
  ) {}

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
    await this.running;
  }

  /** Lets any instance lease these deliveries at once (a clean stop). */
  release(ids: number[]): Promise<void> {
    return this.outbox.renew(this.lease, ids, 0, 0).catch((err: unknown) => this.failed(err, "releasing callback deliveries failed"));
  }

  /** Claims now (an event with a delivery committed here, a delivery finished); coalesced. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.cycle().finally(() => {
      this.running = null;
    });
  }

  /** A delivery answered, or given up: gone from the outbox. */
  done(id: number): Promise<void> {
    return this.outbox.remove(id).catch((err: unknown) => this.failed(err, "removing a delivered callback failed (it will be sent again)"));
  }

  /** A failed attempt: back in the outbox, due at `nextAt`, for any instance. */
  retry(id: number, attempts: number, nextAt: number): Promise<void> {
    return this.outbox.retry(id, this.lease, attempts, nextAt).catch((err: unknown) => this.failed(err, "recording a callback retry failed"));
  }

  private async cycle(): Promise<void> {
    do {
      this.again = false;
      try {
        const now = this.o.clock();
        if (now - this.lastTrim >= TRIM_EVERY_MS) {
          this.lastTrim = now;
          const b = this.o.bounds;
          const counts = await this.outbox.trim(b.perDevice, b.perUser, b.total, now);
          if (counts.device + counts.user + counts.total > 0) this.hooks.trimmed(counts);
        }
        const room = Math.min(CLAIM_BATCH, this.hooks.room());
        if (room <= 0 || this.stopped) continue;
        const rows = await this.outbox.claim(this.lease, this.o.clock(), this.o.leaseMs, room, this.o.perUser, this.hooks.busy());
        if (rows.length > 0 && !this.stopped) this.hooks.take(rows);
      } catch (err) {
        this.failed(err, "claiming callback deliveries failed");
        return;
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
