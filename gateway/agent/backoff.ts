/**
 * Exponential backoff with full jitter (AWS architecture blog, "Exponential Backoff And Jitter"):
 * the n-th consecutive failure waits random(0, min(max, base * 2^n)). The count starts again once
 * the peer has been healthy for `resetAfterMs` (a single success between failures is not health).
 */
export interface BackoffOptions {
  /** First ceiling, ms. Default 1 000. */
  baseMs?: number;
  /** Largest ceiling, ms. Default 120 000. */
  maxMs?: number;
  /** Healthy time after which the failure count resets, ms. Default 30 000. */
  resetAfterMs?: number;
  /** Uniform [0, 1). Default Math.random. */
  random?: () => number;
  clock?: () => number;
}

export class Backoff {
  private failures = 0;
  private healthySince: number | null = null;
  private readonly baseMs: number;
  private readonly maxMs: number;
  private readonly resetAfterMs: number;
  private readonly random: () => number;
  private readonly clock: () => number;

  constructor(o: BackoffOptions = {}) {
    this.baseMs = o.baseMs ?? 1_000;
    this.maxMs = o.maxMs ?? 120_000;
    this.resetAfterMs = o.resetAfterMs ?? 30_000;
    this.random = o.random ?? Math.random;
    this.clock = o.clock ?? Date.now;
    if (!(this.baseMs > 0) || !(this.maxMs >= this.baseMs)) {
      throw new TypeError(`Backoff: need 0 < baseMs <= maxMs, got ${this.baseMs} and ${this.maxMs}`);
    }
  }

  /** Consecutive failures counted so far. */
  get attempts(): number {
    return this.failures;
  }

  /** The ceiling of the next delay, ms. */
  ceiling(): number {
    return Math.min(this.maxMs, this.baseMs * 2 ** Math.min(this.failures, 30));
  }

  /** Records a failure and returns how long to wait before the next try, ms. */
  fail(): number {
    this.settle();
    this.healthySince = null;
    const delay = Math.floor(this.random() * this.ceiling());
    this.failures++;
    return delay;
  }

  /** Records a success: health starts now unless it already had. */
  succeed(): void {
    // Nothing to reset without failures: no clock read (a success a reading in the simulator).
    if (this.failures > 0) this.settle();
    this.healthySince ??= this.clock();
  }

  private settle(): void {
    if (this.healthySince !== null && this.clock() - this.healthySince >= this.resetAfterMs) this.failures = 0;
  }
}

/**
 * Longest Retry-After the agent's loops wait for, ms (10 min). The client already reads a bad field
 * as none and caps a huge one at a day; a day without uploads or commands is still too long for a
 * hub whose outbox has an age limit, so a server (or a proxy) asking for more is asked again after this.
 */
export const MAX_RETRY_AFTER_MS = 600_000;

/**
 * The part of the wait after a 429 that the server asked for (its Retry-After), ms: 0 when it gave
 * none, at most MAX_RETRY_AFTER_MS. The loops add the backoff's jitter on top, so that throttled
 * blocks do not all come back at one instant.
 */
export function retryAfterFloor(retryAfterMs: number | null): number {
  return retryAfterMs !== null && retryAfterMs > 0 ? Math.min(retryAfterMs, MAX_RETRY_AFTER_MS) : 0;
}

/**
 * The wait a 429 asked for, read from the error of any client that carries the Retry-After
 * (BlockClientError, ApiError: `retryAfterMs`), bounded as retryAfterFloor bounds it; 0 without one.
 */
export function retryAfterOf(err: unknown): number {
  const ms = (err as { retryAfterMs?: number | null } | null)?.retryAfterMs;
  return retryAfterFloor(typeof ms === "number" ? ms : null);
}

/** How a loop waits after a failure: `ms`, or less when the signal aborts; never rejects. sleep() below, or a test's. */
export type Wait = (ms: number, signal: AbortSignal) => Promise<void>;

/** Resolves after `ms`, or at once when the signal aborts. Never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
