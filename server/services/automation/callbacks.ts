/**
 * Callback delivery (DESIGN.md "Callbacks"). Each committed data or heartbeat event of a device
 * with a callback is POSTed as `{GUID,G,V,D,DA,timestamp,node}`, signed with HMAC-SHA256 of the
 * body keyed with the callback's secret. Deliveries run off the request path, one at a time per
 * device (order kept), retried with exponential backoff; the callback row is read again before
 * every attempt, so nothing is sent once DELETE has returned. The queue is bounded: beyond it new
 * events are dropped and counted rather than growing memory without end.
 */
import { createHmac, randomUUID } from "node:crypto";
import { setMaxListeners } from "node:events";
import type { Logger } from "pino";
import { Agent, type Dispatcher } from "undici";
import { type CallbackPayload, DELIVERY_HEADER, SIGNATURE_HEADER } from "../../../protocol/automation.js";
import type { Store } from "../../store/types.js";
import { shownDA } from "../devices.js";
import type { CommittedEvent } from "../ingest.js";

export interface CallbackOptions {
  /** Waits after each failed attempt, ms. Default 1, 2, 4, 8, 16, 32 s: 7 tries over about a minute. */
  retryDelaysMs?: number[];
  /** Limit of one attempt, ms. Default 5000. */
  timeoutMs?: number;
  /** Most deliveries waiting in all queues together. Default 10 000. */
  maxQueued?: number;
  /** Most deliveries waiting for one device. Default 1000. */
  maxPerDevice?: number;
  /** undici dispatcher; default a keep-alive pool owned (and closed) by the dispatcher. */
  dispatcher?: Dispatcher;
}

/** `sha256=<hex>`: what receivers compare (constant-time) with their own HMAC of the raw body. */
export function signature(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

interface Item {
  id: string;
  body: string;
  attempts: number;
}

interface DeviceQueue {
  items: Item[];
  running: boolean;
}

export class CallbackDispatcher {
  private readonly queues = new Map<number, DeviceQueue>();
  private readonly waits = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  private readonly idleWaiters: (() => void)[] = [];
  private intake: Promise<void> = Promise.resolve();
  private queued = 0;
  private stopped = false;
  private lastDropLog = 0;
  private readonly abort = new AbortController();
  private readonly retryDelaysMs: number[];
  private readonly timeoutMs: number;
  private readonly maxQueued: number;
  private readonly maxPerDevice: number;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  readonly stats = { delivered: 0, retries: 0, failed: 0, dropped: 0 };

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    options: CallbackOptions = {},
  ) {
    this.retryDelaysMs = options.retryDelaysMs ?? [1000, 2000, 4000, 8000, 16_000, 32_000];
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.maxQueued = options.maxQueued ?? 10_000;
    this.maxPerDevice = options.maxPerDevice ?? 1000;
    this.ownsDispatcher = options.dispatcher === undefined;
    this.dispatcher = options.dispatcher ?? new Agent({ connections: 64, keepAliveTimeout: 10_000, connect: { timeout: this.timeoutMs } });
    // Every delivery in flight listens to the one stop signal.
    setMaxListeners(0, this.abort.signal);
  }

  /** Drops every waiting delivery, aborts those in flight and clears every timer. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    for (const w of this.waits) {
      clearTimeout(w.timer);
      w.resolve();
    }
    this.waits.clear();
    this.queues.clear();
    this.queued = 0;
    this.wakeIdle();
    if (this.ownsDispatcher) await this.dispatcher.close();
  }

  /** Commit listener: queues a delivery for each data or heartbeat event of a device with a callback. */
  readonly onCommitted = (events: CommittedEvent[]): void => {
    if (this.stopped) return;
    // Chained so that batches are looked at in commit order (per-device order).
    this.intake = this.intake.then(() => this.take(events)).catch((err: unknown) => this.log.error({ err }, "queueing callbacks failed"));
  };

  /** Resolves once nothing is queued or in flight (tests, shutdown). */
  idle(): Promise<void> {
    return this.intake.then(
      () =>
        new Promise<void>((resolve) => {
          if (this.queues.size === 0) resolve();
          else this.idleWaiters.push(resolve);
        }),
    );
  }

  get depth(): number {
    return this.queued;
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
      let q = this.queues.get(e.deviceId);
      if (this.queued >= this.maxQueued || (q && q.items.length >= this.maxPerDevice)) {
        this.dropped(e.guid);
        continue;
      }
      const payload: CallbackPayload = {
        GUID: e.guid,
        G: e.G,
        V: e.V,
        D: e.D,
        DA: shownDA({ v: e.V, d: e.D, last_da: e.DA }) ?? e.DA,
        timestamp: e.ts,
        node: e.node,
      };
      if (!q) this.queues.set(e.deviceId, (q = { items: [], running: false }));
      q.items.push({ id: randomUUID(), body: JSON.stringify(payload), attempts: 0 });
      this.queued++;
      if (!q.running) void this.pump(e.deviceId, q);
    }
  }

  private dropped(guid: string): void {
    this.stats.dropped++;
    const now = Date.now();
    if (now - this.lastDropLog > 10_000) {
      this.lastDropLog = now;
      this.log.warn({ guid, queued: this.queued, dropped: this.stats.dropped }, "callback queue full: dropping deliveries");
    }
  }

  private async pump(deviceId: number, q: DeviceQueue): Promise<void> {
    q.running = true;
    try {
      while (q.items.length > 0 && !this.stopped) {
        const item = q.items[0] as Item;
        // Read again before every attempt: a callback deleted (or changed) meanwhile wins.
        const cb = await this.store.callbacks.get(deviceId);
        if (!cb) {
          this.queued -= q.items.length;
          q.items.length = 0;
          break;
        }
        item.attempts++;
        const ok = await this.attempt(cb.url, cb.secret, item);
        if (ok || item.attempts > this.retryDelaysMs.length) {
          if (ok) this.stats.delivered++;
          else {
            this.stats.failed++;
            this.log.warn({ deviceId, attempts: item.attempts }, "callback delivery given up");
          }
          q.items.shift();
          this.queued--;
          continue;
        }
        this.stats.retries++;
        await this.sleep(this.retryDelaysMs[item.attempts - 1] as number);
      }
    } catch (err) {
      this.log.error({ err, deviceId }, "callback delivery loop failed");
      this.queued -= q.items.length;
      q.items.length = 0;
    }
    q.running = false;
    if (this.queues.get(deviceId) === q && q.items.length === 0) this.queues.delete(deviceId);
    if (this.queues.size === 0) this.wakeIdle();
  }

  /**
   * One POST. Leaner than http-out's send(): the hot path of the benchmark. undici's own limits
   * bound it (connect in the Agent, headers and body here), and the dispatcher's one stop signal
   * aborts it, so no timer or controller is made per delivery.
   */
  private async attempt(url: string, secret: string, item: Item): Promise<boolean> {
    try {
      const u = new URL(url);
      const res = await this.dispatcher.request({
        origin: u.origin,
        path: `${u.pathname}${u.search}`,
        method: "POST",
        body: item.body,
        headers: {
          "content-type": "application/json",
          "user-agent": "blockkit-callbacks",
          [SIGNATURE_HEADER]: signature(secret, item.body),
          [DELIVERY_HEADER]: item.id,
        },
        signal: this.abort.signal,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
      await res.body.dump();
      if (res.statusCode >= 200 && res.statusCode <= 299) return true;
      this.log.debug({ status: res.statusCode, attempt: item.attempts }, "callback receiver refused a delivery");
    } catch (err) {
      this.log.debug({ err: (err as Error).message, attempt: item.attempts }, "callback delivery failed");
    }
    return false;
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
