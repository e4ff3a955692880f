/**
 * How the uplink sends one cycle and what the answers do: the cycle's runs go out at once (a run of
 * readings as one heartbeat array, a lone data reading through POST /data, a config event through
 * POST /config), acknowledged entries leave the outbox, a reading the server refuses for good is
 * dropped (a refused batch is resent one by one to find it), a passing failure backs off (after a
 * 429, for the server's Retry-After first, as activation does), and a replay is paced. When to send
 * (the loop and its fast path) is uplink-loop.ts's business, the lean path uplink.ts's.
 */
import type { Logger } from "pino";
import { type BlockClient, BlockClientError } from "../../protocol/block-client.js";
import { Backoff, type Wait, retryAfterFloor, sleep } from "./backoff.js";
import { AgentLoop } from "./loop.js";
import { stamp, wire } from "./runs.js";
import type { Outbox, OutboxEntry, RestorableOutbox } from "./types.js";

export interface UplinkOptions {
  /** Most readings in one heartbeat array. Default 1000 (the server's maximum). */
  batchSize?: number;
  /** Most readings sent per second while replaying a backlog; 0 = unpaced. Default 20 000. */
  ratePerSecond?: number;
  /** Batches in flight at once while replaying a backlog. Default 4. */
  pipeline?: number;
  /**
   * A send window shared with other uplinks (the simulator's fleet): a cycle takes a slot before
   * it cuts its batch and gives it back when the cycle ends. None by default (a gateway is alone).
   */
  window?: SendWindow;
}

/** Slots for cycles in flight, shared by many uplinks. */
export interface SendWindow {
  /** Takes a slot if one is free. */
  tryTake(): boolean;
  /** Waits for a slot; false if `signal` aborted first (no slot is then held). */
  take(signal: AbortSignal): Promise<boolean>;
  /**
   * take() without a promise (optional): `then` hears the outcome, never in the caller's turn; a
   * slot handed over by give() is heard inside that give() call.
   */
  wait?(signal: AbortSignal, then: (took: boolean) => void): void;
  give(): void;
}

export interface UplinkHooks {
  token(): string | null;
  /** The server acknowledged `n` readings. */
  acked(n: number): void;
  /**
   * The server acknowledged a reading of the lean path (Uplink.sendLean), read at `ts`, in place
   * of `acked` (the outbox's listener hears only the stored ones). Required for sendLean.
   */
  leanAcked?(ts: number): void;
  /** The server refused one reading for good (400/413): it was dropped. */
  rejected(entry: OutboxEntry, err: BlockClientError): void;
  /** A call failed with 401/403: the token is revoked. */
  unauthorized(err: BlockClientError): void;
  /** Server reachable (true) or not (false). */
  reachable(up: boolean, err?: unknown): void;
}

/** The outcome of one cycle. */
export interface Cycle {
  sent: number;
  retry: boolean;
  started: number;
}

export abstract class UplinkSender extends AgentLoop {
  private readonly backoff: Backoff;
  protected readonly batchSize: number;
  private readonly ratePerSecond: number;
  protected readonly pipeline: number;
  protected readonly window: SendWindow | undefined;
  /** Most entries cut for one cycle: `pipeline` runs of `batchSize`. */
  protected readonly limit: number;
  /** The longest Retry-After of the 429s since the last backoff, ms (bounded): the next backoff waits it first. */
  private throttleMs = 0;
  /** Uploads answered 429 (each asked again after the Retry-After), for the agent's stats. */
  throttled = 0;
  /** The outbox, when it counts its rows without a stats object and takes entries back (the in-memory one). */
  protected readonly restorable: RestorableOutbox | null;
  /** The agent's clock (ms): when a cycle started, for pacing. */
  protected readonly clock: () => number;

  constructor(
    protected readonly client: BlockClient,
    protected readonly outbox: Outbox,
    protected readonly hooks: UplinkHooks,
    private readonly log: Logger,
    options: UplinkOptions & { backoff?: Backoff; wait?: Wait; clock?: () => number } = {},
  ) {
    super(options.wait);
    this.batchSize = options.batchSize ?? 1000;
    this.ratePerSecond = options.ratePerSecond ?? 20_000;
    this.pipeline = Math.max(1, options.pipeline ?? 4);
    this.window = options.window;
    this.backoff = options.backoff ?? new Backoff();
    this.clock = options.clock ?? Date.now;
    this.limit = this.batchSize * this.pipeline;
    this.restorable = typeof (outbox as Partial<RestorableOutbox>).reserve === "function" ? (outbox as RestorableOutbox) : null;
  }

  override start(): void {
    this.throttleMs = 0; // a 429 answered just before a stop is not waited for after the restart
    super.start();
  }

  /** Sends the runs of one cycle at once; gives its window slot back when they are answered. */
  protected async cycle(token: string, runs: OutboxEntry[][], signal: AbortSignal): Promise<Cycle> {
    const started = this.clock();
    let results: (number | "retry")[];
    try {
      results = runs.length === 1 ? [await this.send(token, runs[0] as OutboxEntry[], signal)] : await Promise.all(runs.map((run) => this.send(token, run, signal)));
    } finally {
      this.window?.give();
    }
    let sent = 0;
    let retry = false;
    for (const r of results) {
      if (r === "retry") retry = true;
      else sent += r;
    }
    return { sent, retry, started };
  }

  /**
   * After a cycle: back off when it failed, pace the replay when it went through. Not async: most
   * cycles need neither wait, and an async frame per cycle (per reading in steady state) showed.
   */
  protected settle(c: Cycle, signal: AbortSignal): Promise<void> | undefined {
    if (c.retry) {
      const floor = this.throttleMs;
      this.throttleMs = 0;
      const delay = this.backoff.fail();
      this.log.debug({ delayMs: floor + delay, retryAfterMs: floor }, floor > 0 ? "uplink throttled by the server (429), backing off" : "uplink failed, backing off");
      return this.backoffSleep(delay, signal, floor);
    }
    if (c.sent > 0 && this.ratePerSecond > 0) {
      const minMs = (c.sent * 1000) / this.ratePerSecond;
      const spent = this.clock() - c.started;
      if (spent < minMs && (this.restorable !== null ? this.restorable.rows : this.outbox.stats().rows) > 0) return sleep(minMs - spent, signal);
    }
    return undefined;
  }

  /** Sends one run; returns how many entries left the outbox, or "retry" on a passing failure. */
  private send(token: string, run: OutboxEntry[], signal: AbortSignal): Promise<number | "retry"> {
    return this.request(token, run, signal).then(
      () => this.delivered(run),
      (err: unknown) => this.failed(err, run, signal),
    );
  }

  /** The client's call for one run (never throws: a failure is a rejection). */
  protected request(token: string, run: OutboxEntry[], signal: AbortSignal): Promise<void> {
    const first = run[0] as OutboxEntry;
    try {
      if (first.kind === "config") {
        return this.client.config(token, { G: first.G, V: first.V, D: first.D, type: first.DA, ...(first.value !== null ? { DA: first.value } : {}), ...stamp(first) }, signal);
      }
      if (run.length === 1 && first.kind === "data") return this.client.data(token, wire(first), signal);
      return this.client.heartbeat(token, run.map(wire), signal);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** A run was acknowledged: it leaves the outbox. */
  protected delivered(run: OutboxEntry[]): number {
    this.outbox.ack(run.length === 1 ? [(run[0] as OutboxEntry).id] : run.map((e) => e.id));
    this.succeeded(run.length);
    return run.length;
  }

  /** `n` stored readings were acknowledged. */
  protected succeeded(n: number): void {
    this.backoff.succeed();
    this.hooks.reachable(true);
    this.hooks.acked(n);
  }

  /** A reading of the lean path (read at `ts`) was acknowledged: leanAcked counts it, not acked. */
  protected leanSucceeded(ts: number): void {
    this.backoff.succeed();
    this.hooks.reachable(true);
    (this.hooks.leanAcked as (ts: number) => void)(ts);
  }

  protected async failed(err: unknown, run: OutboxEntry[], signal: AbortSignal): Promise<number | "retry"> {
    if (signal.aborted) return 0;
    const e = err instanceof BlockClientError ? err : new BlockClientError(String(err), 0, { cause: err });
    if (e.unauthorized) {
      this.hooks.unauthorized(e);
      return 0;
    }
    if (!e.rejected) {
      // A 429 is an answer: the server is reachable, and asked to be left alone for its Retry-After.
      if (e.throttled) {
        this.throttled++;
        this.throttleMs = Math.max(this.throttleMs, retryAfterFloor(e.retryAfterMs));
      }
      this.hooks.reachable(e.throttled, e);
      return "retry";
    }
    this.hooks.reachable(true);
    if (run.length === 1) {
      const only = run[0] as OutboxEntry;
      this.outbox.ack([only.id]);
      this.hooks.rejected(only, e);
      return 1;
    }
    // One bad reading must not hold the rest back: send them one by one to find it.
    let n = 0;
    for (const one of run) {
      const token = this.hooks.token();
      if (signal.aborted || !token) break;
      const got = await this.send(token, [one], signal);
      if (got === "retry") return n > 0 ? n : "retry";
      n += got;
    }
    return n;
  }
}
