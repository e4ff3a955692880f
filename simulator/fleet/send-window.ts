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

interface Waiter {
  resolve(took: boolean): void;
  /** Its signal aborted: skipped when a slot frees. */
  gone: boolean;
}

export class FleetSendWindow implements SendWindow {
  private inFlight = 0;
  private waiters: Waiter[] = [];
  private head = 0;
  private live = 0;
  /**
   * The waiter of each uplink's signal. An uplink keeps one signal for its life and waits at most
   * once at a time, so each signal gets one abort listener, not an add/remove pair per wait.
   */
  private readonly bySignal = new WeakMap<AbortSignal, Waiter | null>();

  constructor(readonly size: number) {
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
    this.inFlight++;
    return true;
  }

  take(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (this.tryTake()) return Promise.resolve(true);
    if (!this.bySignal.has(signal)) {
      signal.addEventListener(
        "abort",
        () => {
          const w = this.bySignal.get(signal);
          this.bySignal.delete(signal);
          if (!w || w.gone) return;
          w.gone = true;
          this.live--;
          w.resolve(false);
        },
        { once: true },
      );
    }
    return new Promise<boolean>((resolve) => {
      const w: Waiter = { resolve, gone: false };
      this.bySignal.set(signal, w);
      this.waiters.push(w);
      this.live++;
    });
  }

  give(): void {
    // The slot goes straight to the oldest waiter still waiting, if any.
    while (this.head < this.waiters.length) {
      const w = this.waiters[this.head] as Waiter;
      this.head++;
      if (w.gone) continue;
      this.live--;
      w.gone = true;
      this.compact();
      w.resolve(true);
      return;
    }
    this.compact();
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
