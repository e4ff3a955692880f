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
    this.settle();
    this.healthySince ??= this.clock();
  }

  private settle(): void {
    if (this.healthySince !== null && this.clock() - this.healthySince >= this.resetAfterMs) this.failures = 0;
  }
}

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
