/**
 * Drains the outbox to the server, oldest first: one request at a time in steady state, so the order
 * per device is the order of arrival; a backlog goes out as several batches at once, and the next
 * cycle is sent while the previous one waits for its answers (the server orders readings by their
 * TIMESTAMP, so overlapping batches are safe). A run of readings goes out as one heartbeat array (up to `batchSize`), a
 * lone data reading through POST /data, a config event through POST /config. Every event carries
 * its original TIMESTAMP and its idempotency KEY, so a batch that is sent again after a lost answer
 * is not stored twice. Entries leave the outbox only once acknowledged. Pacing caps the replay rate
 * after an outage so a hub coming back does not flood the server.
 *
 * The steady state (the loop idle, a few new readings, a free window slot) runs without the loop:
 * notify() queues one microtask that cuts and sends the cycle, and the answer's callback settles
 * it and looks again, as the loop would at its top. The loop stays parked in its idle wait, so a
 * reading costs no wake-up promise and no loop resumption (with ten thousand blocks those promises
 * lived a second each, were promoted and cost the old-generation GC). Anything else (a full
 * window, a backlog of a whole pipeline, a stop) wakes the loop, which decides from the top.
 */
import type { Logger } from "pino";
import { type BlockClient, BlockClientError } from "../../protocol/block-client.js";
import { Backoff, sleep } from "./backoff.js";
import { AgentLoop } from "./loop.js";
import { splitRuns, stamp, wire } from "./runs.js";
import type { Outbox, OutboxEntry } from "./types.js";

export { MAX_BATCH_BYTES, splitRuns } from "./runs.js";

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
  give(): void;
}

export interface UplinkHooks {
  token(): string | null;
  /** The server acknowledged `n` readings. */
  acked(n: number): void;
  /** The server refused one reading for good (400/413): it was dropped. */
  rejected(entry: OutboxEntry, err: BlockClientError): void;
  /** A call failed with 401/403: the token is revoked. */
  unauthorized(err: BlockClientError): void;
  /** Server reachable (true) or not (false). */
  reachable(up: boolean, err?: unknown): void;
}

interface Cycle {
  sent: number;
  retry: boolean;
  started: number;
}

export class Uplink extends AgentLoop {
  /** The loop waits idle: notify() takes the fast path. */
  private parked = false;
  /** A fast cycle (or its backoff) is under way. */
  private busy = false;
  private queued = false;
  /** Set by stop(), cleared by start(). */
  private halted = true;
  /** The signal of the running loop (read once: the getter showed per reading). */
  private signal = this.abort.signal;
  private inFlight: Promise<void> | undefined;
  private readonly fastFn = (): void => this.fast();
  private readonly settledFn = (c: Cycle): void => this.fastSettled(c);
  private readonly againFn = (): void => this.again();
  private readonly tookFn = (took: boolean): void => this.took(took);
  /** A window slot the fast path took and handed to the loop with a backlog. */
  private held = false;
  private readonly backoff: Backoff;
  private readonly batchSize: number;
  private readonly ratePerSecond: number;
  private readonly pipeline: number;
  private readonly window: SendWindow | undefined;
  /** Most entries cut for one cycle: `pipeline` runs of `batchSize`. */
  private readonly limit: number;

  constructor(
    private readonly client: BlockClient,
    private readonly outbox: Outbox,
    private readonly hooks: UplinkHooks,
    private readonly log: Logger,
    options: UplinkOptions & { backoff?: Backoff } = {},
  ) {
    super();
    this.batchSize = options.batchSize ?? 1000;
    this.ratePerSecond = options.ratePerSecond ?? 20_000;
    this.pipeline = Math.max(1, options.pipeline ?? 4);
    this.window = options.window;
    this.backoff = options.backoff ?? new Backoff();
    this.limit = this.batchSize * this.pipeline;
  }

  /** New entries or a token: the steady state sends them without waking the loop (see above). */
  override notify(): void {
    if (this.parked && !this.busy && !this.queued) {
      this.queued = true;
      queueMicrotask(this.fastFn);
    }
  }

  override start(): void {
    this.halted = false;
    super.start();
    this.signal = this.abort.signal;
  }

  override async stop(): Promise<void> {
    this.halted = true;
    this.abort.abort();
    this.wakeLoop();
    await this.inFlight;
    await super.stop();
  }

  /** Hands over to the loop: it leaves its idle wait and decides from its top. */
  private wakeLoop(): void {
    this.parked = false;
    super.notify();
  }

  /** The loop's top, by callbacks: cut and send one cycle, wait for a window slot, or hand over. */
  private fast(): void {
    this.queued = false;
    if (!this.parked || this.busy) return;
    if (this.halted) return this.wakeLoop();
    const token = this.hooks.token();
    const batch = token ? this.outbox.peek(this.limit) : [];
    if (batch.length === 0) return; // the loop would wait idle: it already does
    // A whole pipeline's backlog: overlapping cycles are the loop's business.
    if (batch.length === this.limit) return this.wakeLoop();
    this.busy = true;
    if (!this.window || this.window.tryTake()) return this.send1(token as string, batch);
    this.inFlight = this.window.take(this.signal).then(this.tookFn);
  }

  /** After a wait for a window slot, as the loop: cut the batch again (it takes what arrived meanwhile). */
  private took(took: boolean): void {
    const token = this.hooks.token();
    const batch = took && token && !this.halted ? this.outbox.peek(this.limit) : [];
    if (took && batch.length === 0) this.window?.give();
    if (!took || this.halted) {
      this.busy = false;
      return this.wakeLoop();
    }
    if (batch.length === this.limit) {
      // A backlog: the loop takes over, holding the slot.
      this.busy = false;
      this.held = true;
      return this.wakeLoop();
    }
    if (batch.length === 0) return this.again();
    this.send1(token as string, batch);
  }

  private send1(token: string, batch: OutboxEntry[]): void {
    this.inFlight = this.cycle(token, splitRuns(batch, this.batchSize, this.pipeline), this.signal).then(this.settledFn);
  }

  /** A fast cycle ended: back off or pace as the loop would, then look again. */
  private fastSettled(c: Cycle): void {
    const wait = this.halted ? undefined : this.settle(c, this.signal);
    if (wait) {
      this.inFlight = wait.then(this.againFn);
      return;
    }
    this.again();
  }

  private again(): void {
    this.busy = false;
    this.inFlight = undefined;
    this.fast();
  }

  protected async run(): Promise<void> {
    const signal = this.abort.signal;
    // While a backlog drains, the next cycle is read and sent while the previous one is still
    // waiting for its answers (double buffering): the outbox's reads and deletes and the server's
    // work overlap instead of taking turns. Never across a config event, so it is not overtaken.
    let previous: Promise<Cycle> | null = null;
    let sentUpTo = 0;
    while (!signal.aborted) {
      const token = this.hooks.token();
      const limit = this.limit;
      let batch = token ? this.outbox.peek(limit, previous ? sentUpTo : 0) : [];
      if (this.held) {
        // The fast path waited for this slot and handed it over with a backlog.
        this.held = false;
        if (!token || batch.length === 0) this.window?.give();
      } else if (token && batch.length > 0 && this.window && !this.window.tryTake()) {
        // Wait for a slot, then cut the batch again: it takes along what arrived meanwhile, so a
        // fleet whose window is full sends fewer, larger batches instead of queueing more requests.
        if (!(await this.window.take(signal))) break;
        batch = this.outbox.peek(limit, previous ? sentUpTo : 0);
        if (batch.length === 0) this.window.give();
      }
      if (!token || batch.length === 0) {
        if (previous) {
          const done = await previous;
          previous = null;
          await this.settle(done, signal);
          continue;
        }
        this.parked = true;
        await this.idle(signal);
        this.parked = false;
        continue;
      }
      const runs = splitRuns(batch, this.batchSize, this.pipeline);
      const last = runs[runs.length - 1] as OutboxEntry[];
      sentUpTo = (last[last.length - 1] as OutboxEntry).id;
      const cycle = this.cycle(token, runs, signal);
      if (previous) {
        const done = await previous;
        previous = null;
        if (done.retry) {
          await cycle; // its entries stay in the outbox unless acknowledged; the retry resends the rest
          await this.settle(done, signal);
          continue;
        }
        await this.settle(done, signal);
      }
      const overlap = batch.length === limit && !runs.some((r) => (r[0] as OutboxEntry).kind === "config");
      if (overlap) {
        previous = cycle;
        continue;
      }
      // settle() is most often undefined: no await then (a microtask per reading saved).
      const wait = this.settle(await cycle, signal);
      if (wait) await wait;
    }
    if (previous) await previous;
  }

  /** Sends the runs of one cycle at once; gives its window slot back when they are answered. */
  private async cycle(token: string, runs: OutboxEntry[][], signal: AbortSignal): Promise<Cycle> {
    const started = Date.now();
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
  private settle(c: Cycle, signal: AbortSignal): Promise<void> | undefined {
    if (c.retry) {
      const delay = this.backoff.fail();
      this.log.debug({ delayMs: delay }, "uplink failed, backing off");
      return this.backoffSleep(delay, signal);
    }
    if (c.sent > 0 && this.ratePerSecond > 0) {
      const minMs = (c.sent * 1000) / this.ratePerSecond;
      const spent = Date.now() - c.started;
      if (spent < minMs && this.outbox.stats().rows > 0) return sleep(minMs - spent, signal);
    }
    return undefined;
  }

  /** Sends one run; returns how many entries left the outbox, or "retry" on a passing failure. */
  private async send(token: string, run: OutboxEntry[], signal: AbortSignal): Promise<number | "retry"> {
    const first = run[0] as OutboxEntry;
    try {
      if (first.kind === "config") {
        await this.client.config(token, { G: first.G, V: first.V, D: first.D, type: first.DA, ...(first.value !== null ? { DA: first.value } : {}), ...stamp(first) }, signal);
      } else if (run.length === 1 && first.kind === "data") {
        await this.client.data(token, wire(first), signal);
      } else {
        await this.client.heartbeat(token, run.map(wire), signal);
      }
    } catch (err) {
      return this.failed(err, run, signal);
    }
    this.outbox.ack(run.length === 1 ? [first.id] : run.map((e) => e.id));
    this.backoff.succeed();
    this.hooks.reachable(true);
    this.hooks.acked(run.length);
    return run.length;
  }

  private async failed(err: unknown, run: OutboxEntry[], signal: AbortSignal): Promise<number | "retry"> {
    if (signal.aborted) return 0;
    const e = err instanceof BlockClientError ? err : new BlockClientError(String(err), 0, { cause: err });
    if (e.unauthorized) {
      this.hooks.unauthorized(e);
      return 0;
    }
    if (!e.rejected) {
      this.hooks.reachable(false, e);
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

