/**
 * Callback delivery (DESIGN.md "Callbacks"). Each committed data or heartbeat event of a device
 * with a callback is POSTed as `{GUID,G,V,D,DA,timestamp,node}`, signed with HMAC-SHA256 of the
 * body keyed with the callback's secret (callback-sender.ts). Deliveries run off the request path,
 * one at a time per device (order kept), retried with exponential backoff; the callback row is read
 * again before every attempt, so nothing is sent once DELETE has returned.
 *
 * Durable on both stores: a delivery is a row of the store's outbox written in the transaction of
 * its event, so an acknowledged event's delivery outlives the process (SQLite: a restarted server
 * sends it at once) and the instance (PostgreSQL: another instance takes it over once its lease
 * lapses). The feeder (callback-outbox.ts) leases the heads of the device queues to this process
 * and hands them to the queues here; a failed attempt goes back to the outbox with its next time.
 *
 * Fair between users: the deliveries waiting are bounded per device, per user and in total (the
 * newest beyond a bound are dropped and counted per reason), and each user has at most
 * `maxInFlightPerUser` attempts in flight here (callback-shares.ts). A user whose receiver never
 * answers fills only that user's share and holds only that many connections, each for at most
 * `timeoutMs`; another user's deliveries go on.
 */
import { setMaxListeners } from "node:events";
import type { Logger } from "pino";
import type { Dispatcher } from "undici";
import type { OutboxDelivery, Store } from "../../store/types.js";
import type { CommittedEvent } from "../ingest.js";
import type { OutboundPolicy } from "../outbound-policy.js";
import { OutboxFeeder } from "./callback-outbox.js";
import { CallbackSender, payloadBody } from "./callback-sender.js";
import { CallbackShares, type DeviceQueue, type DropReason, type Item } from "./callback-shares.js";
import { GivenUpLog } from "./given-up-log.js";

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
   * How long this instance's lease on a delivery lasts without renewal, ms, i.e. how soon another
   * PostgreSQL instance takes over the deliveries of one that died. Default 10 000. (On SQLite a
   * restarted server takes a dead process's deliveries over at once.)
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
  private readonly idleWaiters: (() => void)[] = [];
  private stopped = false;
  private stopping: Promise<void> | null = null;
  private readonly abort = new AbortController();
  private readonly retryDelaysMs: number[];
  private readonly feeder: OutboxFeeder;
  /** The warnings of deliveries dropped after their last try, and of those the outbound policy refused: rate-limited. */
  private readonly gaveUpLog: GivenUpLog;
  private readonly refusedLog: GivenUpLog;
  /** Deliveries in the outbox as last counted, plus those committed here since, less those finished or dropped here. */
  private waiting = 0;
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
    // Leased ahead: four deliveries per attempt slot of a user (the next ones of a device, or of
    // other devices), so that a slot freed starts the next delivery without waiting for a claim.
    this.shares = new CallbackShares({ maxInFlightPerUser: bounds.maxInFlightPerUser, maxLeasedPerUser: 4 * bounds.maxInFlightPerUser });
    this.sender = new CallbackSender(log, this.abort.signal, options.timeoutMs ?? 5000, options);
    this.gaveUpLog = new GivenUpLog(log, { first: "callback delivery given up", summary: "callback deliveries given up since the last line" });
    this.refusedLog = new GivenUpLog(log, {
      first: "callback delivery refused by the outbound policy, not retried",
      summary: "callback deliveries refused by the outbound policy since the last line",
    });
    // Every delivery in flight listens to the one stop signal.
    setMaxListeners(0, this.abort.signal);
    this.feeder = new OutboxFeeder(
      store.outbox,
      {
        busy: () => this.shares.busy(),
        held: () => this.shares.held(),
        room: () => bounds.maxQueued - this.shares.queued,
        waiting: () => this.waiting,
        take: (rows) => this.takeLeased(rows),
        trimmed: (n) => {
          this.drops.device_queue_full += n.device;
          this.drops.user_queue_full += n.user;
          this.drops.queue_full += n.total;
          this.stats.dropped += n.device + n.user + n.total;
          this.waiting -= n.device + n.user + n.total;
        },
        counted: (n) => {
          this.waiting = n;
        },
        cycled: () => this.wakeIdle(),
      },
      log,
      {
        leaseMs: options.leaseMs ?? 10_000,
        perUser: 4 * bounds.maxInFlightPerUser,
        bounds: { perDevice: bounds.maxPerDevice, perUser: bounds.maxQueuedPerUser, total: bounds.maxQueued },
        clock: Date.now,
      },
    );
  }

  /** Starts leasing deliveries: those committed here, and those a dead process or instance left. */
  start(): void {
    this.shares.start();
    this.sender.start();
    this.feeder.start();
  }

  /** Aborts the deliveries in flight and clears every timer; the deliveries stay in the outbox, released. */
  /**
   * Stops dispatching. A second call (the server's lifecycle and a caller's own cleanup may both
   * stop it) waits for the first instead of closing the closed pool again.
   */
  stop(): Promise<void> {
    this.stopping ??= this.stopOnce();
    return this.stopping;
  }

  private async stopOnce(): Promise<void> {
    this.stopped = true;
    // Leased deliveries not finished stay in the outbox, released for another instance (or the next start) to send at once.
    const held = this.shares.held();
    await this.feeder.stop();
    this.abort.abort();
    await this.feeder.release(held);
    this.shares.stop();
    this.wakeIdle();
    await this.sender.stop();
    this.gaveUpLog.stop();
    this.refusedLog.stop();
  }

  /** Commit listener: the store wrote the deliveries with the events; lease them now rather than at the next poll. */
  readonly onCommitted = (events: CommittedEvent[]): void => {
    if (this.stopped) return;
    let n = 0;
    for (const e of events) if (e.outboxed) n++;
    if (n === 0) return;
    this.waiting += n;
    this.feeder.wake();
  };

  /** Resolves once nothing is held here nor waits in the outbox (tests), or the dispatcher stopped. */
  async idle(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      if (this.shares.queues.size === 0 && (await this.store.outbox.depth()) === 0) return;
      // Woken when a delivery finishes and after each claim (at least every poll).
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    }
  }

  /** Deliveries waiting or in flight (the outbox's, as last counted and kept up to date here). */
  get depth(): number {
    return Math.max(0, this.waiting, this.shares.queued);
  }

  /** Deliveries leased from the outbox join the device queues (one per device: the head). */
  private takeLeased(rows: OutboxDelivery[]): void {
    for (const r of rows) {
      const body = payloadBody(r.guid, r.g, r.v, r.d, r.da, r.ts, r.node_id);
      const q = this.shares.add(r.device_id, r.user_id, { id: r.delivery, body, attempts: r.attempts, row: r.id });
      if (q) void this.pump(r.device_id, q);
    }
  }

  private async pump(deviceId: number, q: DeviceQueue): Promise<void> {
    q.running = true;
    try {
      while (q.items.length > 0 && !this.stopped) await this.attempt(deviceId, q, q.items[0] as Item);
    } catch (err) {
      this.log.error({ err, deviceId }, "callback delivery loop failed");
      this.shares.removed(q, q.items.length);
      q.items.length = 0;
    }
    q.running = false;
    if (this.shares.queues.get(deviceId) === q && q.items.length === 0) this.shares.queues.delete(deviceId);
    if (this.shares.queues.size === 0) this.wakeIdle();
  }

  /**
   * One attempt of a delivery leased from the outbox, in one of its user's slots. The callback is
   * read again first: nothing is sent once DELETE has returned (it took the delivery's row with it),
   * and a PUT takes effect from the next attempt. A failure goes back to the outbox with its next
   * time instead of waiting here, so that any instance may make the retry.
   */
  private async attempt(deviceId: number, q: DeviceQueue, item: Item): Promise<void> {
    await this.shares.acquire(q.userId);
    let ok = false;
    let url: string | null = null;
    try {
      const cb = this.stopped ? null : await this.store.callbacks.get(deviceId);
      if (cb && !this.stopped) {
        url = cb.url;
        item.attempts++;
        ok = await this.sender.attempt(cb.url, cb.secret, item);
      }
    } finally {
      this.shares.release(q.userId);
    }
    if (this.stopped) return;
    if (url === null) {
      // The callback is gone, and its deliveries with it (ON DELETE CASCADE).
      this.waiting -= q.items.length;
      this.shares.removed(q, q.items.length);
      q.items.length = 0;
      return;
    }
    if (ok) {
      this.stats.delivered++;
      this.waiting--;
      this.feeder.done(item.row);
    } else if (item.attempts > this.retryDelaysMs.length || item.refused) {
      this.giveUp(deviceId, url, item);
      this.waiting--;
      this.feeder.done(item.row);
    } else {
      this.stats.retries++;
      // The device's later deliveries leased with it wait for its retry, in the outbox (order kept).
      const later = q.items.splice(1);
      this.shares.removed(q, later.length);
      await this.feeder.release(later.map((i) => i.row));
      await this.feeder.retry(item.row, item.attempts, Date.now() + (this.retryDelaysMs[item.attempts - 1] as number));
    }
    q.items.shift();
    this.shares.removed(q, 1);
    // The device's next delivery is the head of its queue now; and this user has a free slot.
    this.feeder.wake();
  }

  /** A delivery dropped after its last try, or at once when the outbound policy refused its URL (a retry would be too). */
  private giveUp(deviceId: number, url: string, item: Item): void {
    this.stats.failed++;
    this.drops[item.refused ? "outbound_refused" : "gave_up"]++;
    (item.refused ? this.refusedLog : this.gaveUpLog).gaveUp({ deviceId, url, attempts: item.attempts, why: item.lastError });
  }

  private wakeIdle(): void {
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
