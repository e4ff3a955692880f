/**
 * What the simulator sends with the user token, paced to the server's limit per credential (a token
 * bucket of `perSecond`, holding one second's worth at most: the server's holds two, docs/api.md
 * "Errors"), so that a ramp of thousands of blocks a second, commands and callback registrations
 * together stay under it instead of drawing 429s. The per-block tokens are other credentials, each
 * far below the limit, and are not paced here.
 */

export class CredentialPacer {
  private tokens: number;
  private at: number;
  private readonly burst: number;
  /** Callers of take() waiting for a request, oldest first, and the timer that serves them. */
  private readonly waiting: { resolve: () => void; signal?: AbortSignal; onAbort?: () => void }[] = [];
  private timer: NodeJS.Timeout | undefined;

  /**
   * @param perSecond requests per second allowed on the credential; 0 paces nothing (every take is
   *   granted at once).
   */
  constructor(
    readonly perSecond: number,
    private readonly clock: () => number = Date.now,
  ) {
    if (!(Number.isFinite(perSecond) && perSecond >= 0)) throw new TypeError(`CredentialPacer: perSecond must be a number of 0 or more, got ${String(perSecond)}`);
    this.burst = Math.max(1, perSecond);
    this.tokens = this.burst;
    this.at = clock();
  }

  /** Takes one request's room now; false (nothing taken) when the credential has none left. */
  tryTake(): boolean {
    if (this.perSecond === 0) return true;
    // Callers already waiting go first.
    if (this.waiting.length > 0) return false;
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Resolves once one request may be sent (in the order asked), or at once when `signal` aborts. */
  take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted || this.tryTake()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const w: (typeof this.waiting)[number] = { resolve, signal };
      if (signal) {
        w.onAbort = () => {
          const i = this.waiting.indexOf(w);
          if (i >= 0) this.waiting.splice(i, 1);
          resolve();
        };
        signal.addEventListener("abort", w.onAbort, { once: true });
      }
      this.waiting.push(w);
      this.schedule();
    });
  }

  /** Releases every waiting take() at once and clears the timer (the run is stopping). */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const w of this.waiting.splice(0)) {
      if (w.onAbort) w.signal?.removeEventListener("abort", w.onAbort);
      w.resolve();
    }
  }

  private refill(): void {
    const now = this.clock();
    // A clock that steps backwards refills nothing.
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, now - this.at) / 1000) * this.perSecond);
    this.at = now;
  }

  private schedule(): void {
    if (this.timer || this.waiting.length === 0) return;
    this.refill();
    const wait = this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) / this.perSecond) * 1000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.refill();
      while (this.tokens >= 1 && this.waiting.length > 0) {
        this.tokens -= 1;
        const w = this.waiting.shift() as (typeof this.waiting)[number];
        if (w.onAbort) w.signal?.removeEventListener("abort", w.onAbort);
        w.resolve();
      }
      this.schedule();
    }, wait);
  }
}
