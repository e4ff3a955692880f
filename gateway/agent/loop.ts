/**
 * The shape both of the agent's background loops share (the command poller and the uplink):
 * start/stop with an AbortController, a wake-up when there is new work, and a backoff sleep that
 * ends early when the other loop reached the server again (but never before a 429's Retry-After).
 */
import { type Wait, sleep } from "./backoff.js";

export abstract class AgentLoop {
  protected abort = new AbortController();
  /** The backoff waits (the Retry-After's and the jitter's). Default: a timer. */
  private readonly wait: Wait;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private nap: AbortController | null = null;

  constructor(wait: Wait = sleep) {
    this.wait = wait;
  }

  start(): void {
    if (this.loop) return;
    this.abort = new AbortController();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.notify();
    await this.loop;
    this.loop = null;
  }

  /** The server answered someone else (the poller or the uplink): end a backoff wait now. */
  retryNow(): void {
    this.nap?.abort();
  }

  /** There is work again (a token, new entries): end an idle wait. */
  notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  /** Waits until notify() or stop(). */
  protected idle(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      this.wake = resolve;
      if (signal.aborted) resolve();
    });
  }

  /**
   * Waits `floorMs` (the server's Retry-After: only stop() ends it), then `ms` of backoff, which
   * retryNow() ends early.
   */
  protected async backoffSleep(ms: number, signal: AbortSignal, floorMs = 0): Promise<void> {
    if (floorMs > 0) await this.wait(floorMs, signal);
    const nap = new AbortController();
    this.nap = nap;
    await this.wait(ms, AbortSignal.any([signal, nap.signal]));
    this.nap = null;
  }

  protected abstract run(): Promise<void>;
}
