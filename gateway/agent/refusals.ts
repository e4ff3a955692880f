/**
 * Readings refused because the outbox cannot write (disk full or failing): counted, and logged at
 * most once per `everyMs` with how many were refused since the last line, so a node that keeps
 * publishing into a full disk does not fill the log (or the journal on the same disk) too.
 */
import type { Logger } from "pino";

export class RefusalLog {
  total = 0;
  private sinceLine = 0;
  private lastLine = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly log: Logger,
    private readonly clock: () => number,
    private readonly everyMs = 5_000,
  ) {}

  refused(n: number, reason: string): void {
    this.total += n;
    this.sinceLine += n;
    const now = this.clock();
    if (now - this.lastLine < this.everyMs) return;
    this.log.error({ refused: this.sinceLine, refusedTotal: this.total, reason }, "outbox cannot write: readings refused, not acknowledged to their nodes");
    this.lastLine = now;
    this.sinceLine = 0;
  }
}
