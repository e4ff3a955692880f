/**
 * Whether the store can write, as the requests see it: a request that failed for a store reason
 * (errors.ts storeFailure: disk full, I/O error, read-only) makes the store `degraded` for
 * /healthz; the next write request answered 2xx (its commit succeeded) makes it ok again.
 */
export interface StoreHealthState {
  ok: boolean;
  /** The last store failure while degraded: its code, message and epoch ms. */
  failure?: { code: string; message: string; at: number };
  /** Requests refused with 503 for a store reason since the start. */
  refused: number;
}

export class StoreHealth {
  private failure: { code: string; message: string; at: number } | null = null;
  private refused = 0;

  constructor(private readonly clock: () => number = Date.now) {}

  failed(f: { code: string; message: string }): void {
    this.refused++;
    this.failure = { ...f, at: this.clock() };
  }

  /** A write was committed. */
  wrote(): void {
    this.failure = null;
  }

  state(): StoreHealthState {
    return this.failure ? { ok: false, failure: this.failure, refused: this.refused } : { ok: true, refused: this.refused };
  }
}
