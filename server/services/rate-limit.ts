/** Per-credential token buckets. A bucket refills at `perSecond` up to `burst`. */
import { ServiceError } from "../errors.js";

export interface RateLimitOptions {
  /** Sustained requests per second per credential; 0 disables limiting. Default 1000. */
  perSecond: number;
  /** Bucket size. Default 2 × perSecond. */
  burst: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private sweep: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: RateLimitOptions,
    private readonly clock: () => number = Date.now,
    /** Told each time a bucket is found empty (the server counts it as a limit that bit). */
    private readonly onLimited?: () => void,
  ) {}

  start(): void {
    // Forget full buckets once a minute so idle credentials cost no memory.
    this.sweep = setInterval(() => this.prune(), 60_000);
    this.sweep.unref();
  }

  stop(): void {
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = undefined;
  }

  /**
   * Takes one request from the key's bucket; throws 429 when it is empty, with the whole seconds
   * until the bucket holds a request again (at least 1: Retry-After counts whole seconds).
   */
  take(key: string): void {
    if (this.tryTake(key)) return;
    throw new ServiceError("RATE_LIMITED", "rate limit exceeded for this credential; slow down", { retryAfterS: this.retryAfterS(key) });
  }

  /** Whole seconds until the key's bucket holds a request again, at least 1 (for a refusal's Retry-After). */
  retryAfterS(key: string): number {
    const b = this.buckets.get(key);
    const tokens = b ? Math.min(this.options.burst, b.tokens + (Math.max(0, this.clock() - b.at) / 1000) * this.options.perSecond) : this.options.burst;
    // Rounded to the millisecond first, so that float noise (20.000000000000004 s) adds no second.
    return Math.max(1, Math.ceil(Math.round(((1 - tokens) / this.options.perSecond) * 1000) / 1000));
  }

  /**
   * Gives back one request taken from the key's bucket, for a request that will be charged again on
   * another path (the fast ingest lane's replay through fastify), so that it is charged once.
   */
  giveBack(key: string): void {
    const b = this.buckets.get(key);
    if (b) b.tokens = Math.min(this.options.burst, b.tokens + 1);
  }

  /**
   * Takes one request from the key's bucket; false (and nothing taken) when it is empty. `report`
   * false: an empty bucket is not told to `onLimited`, for a caller that hands the request to a
   * path that takes (and reports) again (the fast ingest lane), so that one refusal counts once.
   */
  tryTake(key: string, report = true): boolean {
    if (this.options.perSecond <= 0) return true;
    const now = this.clock();
    const b = this.buckets.get(key);
    if (!b) {
      this.buckets.set(key, { tokens: this.options.burst - 1, at: now });
      return true;
    }
    // A clock that steps backwards refills nothing rather than draining the bucket.
    b.tokens = Math.min(this.options.burst, b.tokens + (Math.max(0, now - b.at) / 1000) * this.options.perSecond);
    b.at = now;
    if (b.tokens < 1) {
      if (report) this.onLimited?.();
      return false;
    }
    b.tokens -= 1;
    return true;
  }

  private prune(): void {
    const now = this.clock();
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.options.perSecond >= this.options.burst) this.buckets.delete(key);
    }
  }
}
