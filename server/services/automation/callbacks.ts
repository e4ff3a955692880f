/**
 * Callback delivery (DESIGN.md "Callbacks"). Each committed data or heartbeat event of a device
 * with a callback is POSTed as `{GUID,G,V,D,DA,timestamp,node}`, signed with HMAC-SHA256 of the
 * body keyed with the callback's secret (callback-sender.ts). Deliveries run off the request path,
 * one at a time per device (order kept), retried with exponential backoff; the callback row is read
 * again before every attempt, so nothing is sent once DELETE has returned.
 *
 * Fair between users: the queues are bounded per device, per user and in total, and each user has
 * at most `maxInFlightPerUser` attempts in flight. A user whose receiver never answers fills only
 * that user's share and holds only that many connections, each for at most `timeoutMs`; another
 * user's deliveries go on. Events beyond a bound are dropped and counted per reason (callback-shares.ts).
 *
 * On a store with an outbox (PostgreSQL, several instances) the queues are fed from it instead of
 * from the commit listener (callback-outbox.ts): a delivery is a row written with its event, leased
 * by one instance, and taken over by another when the instance delivering it is lost. The bounds
 * then apply to the rows waiting, and the attempt slots per user to each instance.
 */
import { randomUUID } from "node:crypto";
import { setMaxListeners } from "node:events";
import type { Logger } from "pino";
import type { Dispatcher } from "undici";
import type { OutboxDelivery, Store } from "../../store/types.js";
import type { CommittedEvent } from "../ingest.js";
import type { OutboundPolicy } from "../outbound-policy.js";
import { OutboxFeeder } from "./callback-outbox.js";
import { CallbackSender, payloadBody } from "./callback-sender.js";
import { CallbackShares, type DeviceQueue, type DropReason, type Item } from "./callback-shares.js";

export interface CallbackOptions {
  /** Waits after each failed attempt, ms. Default 1, 2, 4, 8, 16, 32 s: 7 tries over about a minute. */
  retryDelaysMs?: number[];
  /** Limit of one attempt, ms. Default 5000. */
  timeoutMs?: number;
  /** Most deliveries waiting in all queues together. Default 10 000. */
  maxQueued?: number;
  /** Most deliveries waiting for one user's devices together. Default 1000. */
  maxQueuedPerUser?: number;
  /** Most deliveries waiting for one device. Default 500. */
  maxPerDevice?: number;
  /** Attempts in flight at once for one user's callbacks. Default 8. */
  maxInFlightPerUser?: number;
  /**
   * With an outbox (PostgreSQL): how long this instance's lease on a delivery lasts without renewal,
   * ms, i.e. how soon another instance takes over the deliveries of one that died. Default 10 000.
   */
  leaseMs?: number;
  /** undici dispatcher (tests); default a keep-alive pool owned (and closed) by the dispatcher. */
  dispatcher?: Dispatcher;
  /** Where deliveries may connect: the default pool connects through it (outbound-policy.ts). */
  policy?: OutboundPolicy;
}

export class CallbackDispatcher {
  private readonly shares: CallbackShares;
  private readonly sender: CallbackSender;
  private readonly waits = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  private readonly idleWaiters: (() => void)[] = [];
  private intake: Promise<void> = Promise.resolve();
  private stopped = false;
  private lastDropLog = 0;
  private readonly abort = new AbortController();
  private readonly retryDelaysMs: number[];
  private readonly feeder: OutboxFeeder | null = null;
  readonly stats = { delivered: 0, retries: 0, failed: 0, dropped: 0 };
  /** Drops per reason (`dropped` is their sum less `gave_up` and `outbound_refused`, which `failed` counts). */
  readonly drops: Record<DropReason, number> = { queue_full: 0, user_queue_full: 0, device_queue_full: 0, gave_up: 0, outbound_refused: 0 };

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    options: CallbackOptions = {},
  ) {
    this.retryDelaysMs = options.retryDelaysMs ?? [1000, 2000, 4000, 8000, 16_000, 32_000];
    const bounds = {
      maxQueued: options.maxQueued ?? 10_000,
      maxPerDevice: options.maxPerDevice ?? 500,
      maxQueuedPerUser: options.maxQueuedPerUser ?? 1000,
      maxInFlightPerUser: options.maxInFlightPerUser ?? 8,
    };
    this.shares = new CallbackShares(bounds);
    this.sender = new CallbackSender(log, this.abort.signal, options.timeoutMs ?? 5000, options);
    // Every delivery in flight listens to the one stop signal.
    setMaxListeners(0, this.abort.signal);
    if (store.outbox) {
      this.feeder = new OutboxFeeder(
        store.outbox,
        {
          busy: () => this.shares.busy(),
          held: () => this.shares.held(),
          room: () => bounds.maxQueued - this.shares.queued,
          take: (rows) => this.takeLeased(rows),
          trimmed: (n) => {
            this.drops.device_queue_full += n.device;
            this.drops.user_queue_full += n.user;
            this.drops.queue_full += n.total;
            this.stats.dropped += n.device + n.user + n.total;
            this.log.warn({ ...n }, "callback outbox over its bounds: newest deliveries dropped");
          },
        },
        log,
        {
          leaseMs: options.leaseMs ?? 10_000,
          perUser: bounds.maxInFlightPerUser,
          bounds: { perDevice: bounds.maxPerDevice, perUser: bounds.maxQueuedPerUser, total: bounds.maxQueued },
          clock: Date.now,
        },
      );
    }
  }

  /** With an outbox: starts leasing deliveries (this instance's and those other instances lost). */
  start(): void {
    this.shares.start();
    this.sender.start();
    this.feeder?.start();
  }

  /** Drops every waiting delivery, aborts those in flight and clears every timer. */
  async stop(): Promise<void> {
    this.stopped = true;
    // Leased deliveries not finished stay in the outbox, released for another instance to send at once.
    const held = this.shares.held();
    await this.feeder?.stop();
    this.abort.abort();
    await this.feeder?.release(held);
    for (const w of this.waits) {
      clearTimeout(w.timer);
      w.resolve();
    }
    this.waits.clear();
    this.shares.stop();
    this.wakeIdle();
    await this.sender.stop();
  }

  /** Commit listener: queues a delivery for each data or heartbeat event of a device with a callback. */
  readonly onCommitted = (events: CommittedEvent[]): void => {
    if (this.stopped) return;
    if (this.feeder) {
      // The store wrote the deliveries with the events: lease them now rather than at the next poll.
      if (events.some((e) => e.outboxed)) this.feeder.wake();
      return;
    }
    // Chained so that batches are looked at in commit order (per-device order).
    this.intake = this.intake.then(() => this.take(events)).catch((err: unknown) => this.log.error({ err }, "queueing callbacks failed"));
  };

  /** Resolves once nothing is queued or in flight (tests, shutdown). */
  idle(): Promise<void> {
    return this.intake.then(
      () =>
        new Promise<void>((resolve) => {
          if (this.shares.queues.size === 0) resolve();
          else this.idleWaiters.push(resolve);
        }),
    );
  }

  get depth(): number {
    return this.shares.queued;
  }

  private async take(events: CommittedEvent[]): Promise<void> {
    const ids = new Set<number>();
    for (const e of events) if (e.kind !== "config") ids.add(e.deviceId);
    if (ids.size === 0 || this.stopped) return;
    // One query per committed batch; whether the callback still exists is read again at each attempt.
    const withCallback = new Set((await this.store.callbacks.byDevices([...ids])).map((c) => c.device_id));
    if (withCallback.size === 0) return;
    for (const e of events) {
      if (e.kind === "config" || this.stopped || !withCallback.has(e.deviceId)) continue;
      const full = this.shares.full(e.deviceId, e.userId);
      if (full) {
        this.dropped(e.guid, e.userId, full);
        continue;
      }
      this.enqueue(e.deviceId, e.userId, { id: randomUUID(), body: payloadBody(e.guid, e.G, e.V, e.D, e.DA, e.ts, e.node), attempts: 0 });
    }
  }

  private enqueue(deviceId: number, userId: number, item: Item): void {
    const q = this.shares.add(deviceId, userId, item);
    if (q) void this.pump(deviceId, q);
  }

  /** Deliveries leased from the outbox join the device queues (one per device: the head). */
  private takeLeased(rows: OutboxDelivery[]): void {
    for (const r of rows) {
      const body = payloadBody(r.guid, r.g, r.v, r.d, r.da, r.ts, r.node_id);
      this.enqueue(r.device_id, r.user_id, { id: r.delivery, body, attempts: r.attempts, leased: { row: r.id, url: r.url, secret: r.secret } });
    }
  }

  private dropped(guid: string, userId: number, reason: DropReason): void {
    this.stats.dropped++;
    this.drops[reason]++;
    const now = Date.now();
    if (now - this.lastDropLog > 10_000) {
      this.lastDropLog = now;
      this.log.warn({ guid, userId, reason, queued: this.shares.queued, dropped: this.stats.dropped }, "callback queue full: dropping deliveries");
    }
  }

  private async pump(deviceId: number, q: DeviceQueue): Promise<void> {
    q.running = true;
    try {
      while (q.items.length > 0 && !this.stopped) {
        const item = q.items[0] as Item;
        if (item.leased) {
          await this.leasedAttempt(deviceId, q, item);
          continue;
        }
        // Read again before every attempt: a callback deleted (or changed) meanwhile wins.
        const cb = await this.store.callbacks.get(deviceId);
        if (!cb) {
          this.shares.removed(q, q.items.length);
          q.items.length = 0;
          break;
        }
        const ok = await this.attemptInSlot(q.userId, cb.url, cb.secret, item);
        if (this.stopped) break;
        if (ok || item.attempts > this.retryDelaysMs.length || item.refused) {
          if (ok) this.stats.delivered++;
          else this.giveUp(deviceId, cb.url, item);
          q.items.shift();
          this.shares.removed(q, 1);
          continue;
        }
        this.stats.retries++;
        await this.sleep(this.retryDelaysMs[item.attempts - 1] as number);
      }
    } catch (err) {
      this.log.error({ err, deviceId }, "callback delivery loop failed");
      this.shares.removed(q, q.items.length);
      q.items.length = 0;
    }
    q.running = false;
    if (this.shares.queues.get(deviceId) === q && q.items.length === 0) this.shares.queues.delete(deviceId);
    if (this.shares.queues.size === 0) this.wakeIdle();
  }

  /** A delivery dropped after its last try, or at once when the outbound policy refused its URL (a retry would be too). */
  private giveUp(deviceId: number, url: string, item: Item): void {
    this.stats.failed++;
    this.drops[item.refused ? "outbound_refused" : "gave_up"]++;
    this.log.warn({ deviceId, url, attempts: item.attempts, why: item.lastError }, item.refused ? "callback delivery refused by the outbound policy, not retried" : "callback delivery given up");
  }

  /** One attempt, in one of the user's slots (waiting for one). */
  private async attemptInSlot(userId: number, url: string, secret: string, item: Item): Promise<boolean> {
    item.attempts++;
    await this.shares.acquire(userId);
    try {
      return this.stopped ? false : await this.sender.attempt(url, secret, item);
    } finally {
      this.shares.release(userId);
    }
  }

  /**
   * One attempt of a delivery leased from the outbox. Its callback was read with the lease (a
   * deleted callback takes its deliveries with it: ON DELETE CASCADE). A failure goes back to the
   * outbox with its next time instead of waiting here, so that any instance may make the retry.
   */
  private async leasedAttempt(deviceId: number, q: DeviceQueue, item: Item): Promise<void> {
    const { row, url, secret } = item.leased as NonNullable<Item["leased"]>;
    const ok = await this.attemptInSlot(q.userId, url, secret, item);
    if (this.stopped) return;
    if (ok) {
      this.stats.delivered++;
      await this.feeder?.done(row);
    } else if (item.attempts > this.retryDelaysMs.length || item.refused) {
      this.giveUp(deviceId, url, item);
      await this.feeder?.done(row);
    } else {
      this.stats.retries++;
      await this.feeder?.retry(row, item.attempts, Date.now() + (this.retryDelaysMs[item.attempts - 1] as number));
    }
    q.items.shift();
    this.shares.removed(q, 1);
    // The device's next delivery is the head of its queue now; and this user has a free slot.
    this.feeder?.wake();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const w = {
        timer: setTimeout(() => {
          this.waits.delete(w);
          resolve();
        }, ms),
        resolve,
      };
      this.waits.add(w);
    });
  }

  private wakeIdle(): void {
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
