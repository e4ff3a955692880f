/**
 * What the log says while the callback outbox is over its bounds. The feeder trims it every 0.2 s
 * then, and a warning per trim buried the log under an overload. A warning when deliveries are
 * first dropped; while drops go on, at most one a minute with what was dropped since the line
 * before; and an info line once the outbox is back within its bounds: a trim dropped nothing,
 * QUIET_MS or more after the last drop (a lull between two bursts is not the end).
 */
import type { Logger } from "pino";

/** Deliveries one trim dropped, per bound: per device, per user, in total. */
export interface TrimCounts {
  device: number;
  user: number;
  total: number;
}

/** Least time between two warnings of one overload, ms. */
export const REPEAT_EVERY_MS = 60_000;
/** An overload ends at a trim that drops nothing this long after the last drop, ms. */
export const QUIET_MS = 10_000;

export class OverBoundsLog {
  /** When the overload began (its first drop), null while within bounds. */
  private since: number | null = null;
  private lastLine = 0;
  private lastDrop = 0;
  /** Dropped since the last line. */
  private pending: TrimCounts = { device: 0, user: 0, total: 0 };
  /** Dropped since the overload began. */
  private dropped = 0;

  constructor(private readonly log: Logger) {}

  /** After every trim, with what it dropped, at `now` (epoch ms). */
  trimmed(n: TrimCounts, now: number): void {
    const sum = n.device + n.user + n.total;
    if (sum === 0) {
      if (this.since !== null && now - this.lastDrop >= QUIET_MS) this.ended();
      return;
    }
    this.lastDrop = now;
    this.dropped += sum;
    if (this.since === null) {
      this.since = now;
      this.lastLine = now;
      this.log.warn({ ...n }, "callback outbox over its bounds: newest deliveries dropped (logged again at most once a minute while it lasts)");
      return;
    }
    this.pending.device += n.device;
    this.pending.user += n.user;
    this.pending.total += n.total;
    if (now - this.lastLine < REPEAT_EVERY_MS) return;
    this.log.warn({ ...this.pending, sinceLastLineMs: now - this.lastLine, droppedInAll: this.dropped, overForMs: now - this.since }, "callback outbox still over its bounds: newest deliveries dropped since the last line");
    this.lastLine = now;
    this.pending = { device: 0, user: 0, total: 0 };
  }

  private ended(): void {
    const since = this.since as number;
    this.log.info({ ...this.pending, droppedInAll: this.dropped, overForMs: this.lastDrop - since }, "callback outbox back within its bounds (the counts: dropped since the last line)");
    this.since = null;
    this.dropped = 0;
    this.pending = { device: 0, user: 0, total: 0 };
  }
}
