/**
 * The fleet's send window: at most `size` uplink cycles in flight across every simulated block.
 *
 * Without it, ten thousand blocks that fall behind (a ramp-up, a slow server) each keep a request
 * queued in the HTTP pool: every block's request is cut from its outbox when its previous one is
 * answered, then waits seconds for a connection, carrying only the readings of that moment. The
 * queue never drains (each answer starts the next small request), and the queued requests live long
 * enough to be promoted, so the garbage collector's old-generation work grows with the queue.
 * With the window, a block that finds it full waits for a slot before cutting its batch, and then
 * sends everything that arrived meanwhile in one heartbeat: a backlog becomes fewer, larger
 * requests and drains. The waiters are served in order.
 */
import type { SendWindow } from "../../gateway/agent/index.js";

/** A signal's waiter: one object per signal, reused for each of its waits (it waits once at a time). */
interface Waiter {
  resolve(took: boolean): void;
  /** Not waiting (served, or its signal aborted): skipped when a slot frees. */
  gone: boolean;
}

/** A served waiter's resolve: it holds no promise until its next wait. */
const served = (): void => {};

/** How the window was used since the last reset (for the report's "limited by" verdict). */
export interface WindowSummary {
  size: number;
  /** Share of the time every slot was taken, percent. */
  full_percent: number;
  mean_in_flight: number;
  /** Cycles (requests) that ended. */
  cycles: number;
  /** Mean time a cycle held its slot, ms (Little's law: mean in flight / completion rate). */
  cycle_ms: number | null;
  /**
   * The part of it spent on a connection, ms: with more requests in flight than connections, the
   * rest waited in the pool for one (cycle_ms × connections / mean in flight).
   */
  exchange_ms: number | null;
}

export class FleetSendWindow implements SendWindow {
  private inFlight = 0;
  /** Time accounting since the last reset: in-flight × ms, ms full, cycles ended. */
  private since = performance.now();
  private changedAt = this.since;
  private inFlightMs = 0;
  private fullMs = 0;
  private ended = 0;
  private waiters: Waiter[] = [];
  private head = 0;
  private live = 0;
  /**
   * The waiter of each uplink's signal. An uplink keeps one signal for its life and waits at most
   * once at a time, so each signal gets one abort listener, not an add/remove pair per wait.
   */
  private readonly bySignal = new WeakMap<AbortSignal, Waiter>();

  constructor(
    readonly size: number,
    /** The connections the requests share (for exchange_ms); default: one per slot. */
    private readonly connections = size,
  ) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`the send window needs a size of at least 1, got ${size}`);
  }

  /** Cycles in flight now. */
  get busy(): number {
    return this.inFlight;
  }

  /** Uplinks waiting for a slot. */
  get waiting(): number {
    return this.live;
  }

  tryTake(): boolean {
    if (this.inFlight >= this.size) return false;
    this.account();
    this.inFlight++;
    return true;
  }

  /** Starts the time accounting anew (the measured window begins). */
  resetStats(): void {
    this.since = this.changedAt = performance.now();
    this.inFlightMs = this.fullMs = this.ended = 0;
  }

  summary(): WindowSummary {
    this.account();
    const ms = this.changedAt - this.since;
    const mean = ms > 0 ? this.inFlightMs / ms : 0;
    return {
      size: this.size,
      full_percent: ms > 0 ? Math.round((1000 * this.fullMs) / ms) / 10 : 0,
      mean_in_flight: Math.round(mean * 10) / 10,
      cycles: this.ended,
      cycle_ms: this.ended > 0 ? Math.round((100 * this.inFlightMs) / this.ended) / 100 : null,
      exchange_ms: this.ended > 0 ? Math.round((100 * this.inFlightMs * Math.min(1, this.connections / Math.max(mean, 1e-9))) / this.ended) / 100 : null,
    };
  }

  /** Adds the time since the last change at the current occupancy. */
  private account(): void {
    const now = performance.now();
    const dt = now - this.changedAt;
    this.inFlightMs += this.inFlight * dt;
    if (this.inFlight >= this.size) this.fullMs += dt;
    this.changedAt = now;
  }

  take(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (this.tryTake()) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => this.enqueue(signal, resolve));
  }

  /**
   * take() without a promise: a slot handed over runs `then(true)` inside give() (a reading behind a
   * full window then leaves in the turn its slot freed, without a promise and a microtask);
   * otherwise `then` runs on a microtask.
   */
  wait(signal: AbortSignal, then: (took: boolean) => void): void {
    if (signal.aborted) return queueMicrotask(() => then(false));
    if (this.tryTake()) return queueMicrotask(() => then(true));
    this.enqueue(signal, then);
  }

  /** Queues a wait for a slot; `resolve(false)` on a microtask if the signal aborts first. */
  private enqueue(signal: AbortSignal, resolve: (took: boolean) => void): void {
    let w = this.bySignal.get(signal);
    if (!w) {
      signal.addEventListener(
        "abort",
        () => {
          const aborted = this.bySignal.get(signal);
          this.bySignal.delete(signal);
          if (!aborted || aborted.gone) return;
          aborted.gone = true;
          this.live--;
          const resolve = aborted.resolve;
          aborted.resolve = served;
          queueMicrotask(() => resolve(false));
        },
        { once: true },
      );
    }
    // A second wait while the first is pending (not the uplink's way) gets a waiter of its own.
    if (!w || !w.gone) {
      w = { resolve: served, gone: true };
      this.bySignal.set(signal, w);
    }
    w.resolve = resolve;
    w.gone = false;
    this.waiters.push(w);
    this.live++;
  }

  give(): void {
    this.ended++;
    // The slot goes straight to the oldest waiter still waiting, if any.
    while (this.head < this.waiters.length) {
      const w = this.waiters[this.head] as Waiter;
      // Let go of it now, not at the next compaction.
      (this.waiters as (Waiter | undefined)[])[this.head] = undefined;
      this.head++;
      if (w.gone) continue;
      this.live--;
      w.gone = true;
      // Served: the waiter keeps no promise (nor what awaits it) until its signal's next wait, a
      // second later in a fleet, long enough to be promoted.
      const resolve = w.resolve;
      w.resolve = served;
      this.compact();
      resolve(true);
      return;
    }
    this.compact();
    this.account();
    this.inFlight--;
  }

  private compact(): void {
    if (this.head === this.waiters.length) {
      this.waiters.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.waiters.length) {
      this.waiters = this.waiters.slice(this.head);
      this.head = 0;
    }
  }
}
