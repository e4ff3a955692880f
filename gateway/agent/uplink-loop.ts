/**
 * When the uplink sends its cycles: the loop (run) and its fast path. How one cycle is sent and what
 * its answers do is in uplink-send.ts; the simulator's lean path, on top of this, in uplink.ts.
 *
 * While a backlog drains, the loop sends it as several batches at once, and the next cycle is sent
 * while the previous one waits for its answers (the server orders readings by their TIMESTAMP, so
 * overlapping batches are safe).
 *
 * The steady state (the loop idle, a few new readings, a free window slot) runs without the loop:
 * notify() queues one microtask that cuts and sends the cycle, and the answer's callback settles
 * it and looks again, as the loop would at its top. The loop stays parked in its idle wait, so a
 * reading costs no wake-up promise and no loop resumption (with ten thousand blocks those promises
 * lived a second each, were promoted and cost the old-generation GC). A cycle of one run (a reading,
 * or a turn's few as one heartbeat) is sent and settled by two callbacks on the client's promise,
 * without cycle()'s async frames. Anything else (a full
 * window, a backlog of a whole pipeline, a stop) wakes the loop, which decides from the top.
 */
import { splitRuns } from "./runs.js";
import type { OutboxEntry } from "./types.js";
import { type Cycle, UplinkSender } from "./uplink-send.js";

export abstract class UplinkLoop extends UplinkSender {
  /** The loop waits idle: notify() takes the fast path. */
  protected parked = false;
  /** A fast cycle (or its backoff) is under way. */
  protected busy = false;
  protected queued = false;
  /** Set by stop(), cleared by start(). */
  protected halted = true;
  /** The signal of the running loop (read once: the getter showed per reading). */
  protected signal = this.abort.signal;
  protected inFlight: Promise<void> | undefined;
  private readonly fastFn = (): void => this.fast();
  private readonly settledFn = (c: Cycle): void => this.fastSettled(c);
  private readonly againFn = (): void => this.again();
  private readonly tookFn = (took: boolean): void => this.took(took);
  private readonly run1OkFn = (): void => this.run1Ok();
  private readonly run1FailedFn = (err: unknown): Promise<void> => this.run1Failed(err);
  /** The run of the fast cycle in flight, and that cycle's outcome (settle() reads it, keeps nothing). */
  protected run1: OutboxEntry[] | null = null;
  protected readonly one: Cycle = { sent: 0, retry: false, started: 0 };
  /** A window slot the fast path took and handed to the loop with a backlog. */
  private held = false;

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
    const out = this.outstanding();
    if (out) await out;
    await this.inFlight;
    await super.stop();
  }

  /** A call whose outcome comes by callback, not in inFlight (the lean path's): stop() waits for it first. */
  protected outstanding(): Promise<void> | undefined {
    return undefined;
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
  protected took(took: boolean): void {
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
    // A lone entry is one run (what splitRuns would cut): no arrays made for it.
    const runs = batch.length === 1 ? null : splitRuns(batch, this.batchSize, this.pipeline);
    if (runs !== null && runs.length > 1) {
      this.inFlight = this.cycle(token, runs, this.signal).then(this.settledFn);
      return;
    }
    // One run, the steady state: the cycle by callbacks on the client's promise (no async frames),
    // its run and start in fields (one fast cycle at a time).
    this.run1 = runs === null ? batch : (runs[0] as OutboxEntry[]);
    this.one.started = this.clock();
    this.inFlight = this.request(token, this.run1, this.signal).then(this.run1OkFn, this.run1FailedFn);
  }

  /** The fast cycle's run was acknowledged. */
  private run1Ok(): void {
    const run = this.run1 as OutboxEntry[];
    this.run1 = null;
    try {
      this.one.sent = this.delivered(run);
    } finally {
      this.window?.give();
    }
    this.one.retry = false;
    this.fastSettled(this.one);
  }

  /** The fast cycle's run failed: what a cycle does then (one by one after a refusal, or retry). */
  protected run1Failed(err: unknown): Promise<void> {
    const run = this.run1 as OutboxEntry[];
    this.run1 = null;
    return this.failed(err, run, this.signal).then(
      (r) => {
        this.window?.give();
        this.one.sent = r === "retry" ? 0 : r;
        this.one.retry = r === "retry";
        this.fastSettled(this.one);
      },
      (e: unknown) => {
        this.window?.give();
        throw e;
      },
    );
  }

  /** A fast cycle ended: back off or pace as the loop would, then look again. */
  protected fastSettled(c: Cycle): void {
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
}
