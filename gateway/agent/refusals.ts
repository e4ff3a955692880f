/**
 * Readings refused because the outbox cannot write (disk full or failing): counted, and logged at
 * most once per `everyMs` with how many were refused since the last line, so a node that keeps
 * publishing into a full disk does not fill the log (or the journal on the same disk) too.
 */
import type { Logger } from "pino";
import { type NewOutboxEntry, type Outbox, OutboxFullError } from "./types.js";

export class RefusalLog {
  total = 0;
  private sinceLine = 0;
  private lastLine = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly log: Logger,
    private readonly clock: () => number,
    private readonly everyMs = 5_000,
  ) {}

  /** outbox.append, or `refused` (counted, logged) when the outbox cannot write: nothing was stored. */
  append(outbox: Outbox, entries: NewOutboxEntry[]): number | "refused" {
    try {
      return outbox.append(entries);
    } catch (err) {
      if (!(err instanceof OutboxFullError)) throw err;
      this.refused(entries.length, err.message);
      return "refused";
    }
  }

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
