/**
 * What the log says when callback deliveries are dropped after their last try (or refused by the
 * outbound policy). A line per delivery buried the log when a receiver died under many devices, as
 * the outbox-bounds warning did (over-bounds-log.ts): now the first one is logged at once with all
 * its detail; those that follow within the minute are counted per callback (one per device) and
 * logged together at most once a minute, by a timer, with the counts since the line before; a
 * give-up a minute or more after the last line is logged at once again. stop() logs what is still
 * counted, so that nothing counted is lost at shutdown.
 */
import type { Logger } from "pino";
import { REPEAT_EVERY_MS } from "./over-bounds-log.js";

/** Most callbacks listed in one summary line (those with the most give-ups); the others are only counted. */
export const MOST_LISTED = 10;

/** One delivery dropped: its callback (device id and URL), its tries and the last error. */
export interface GivenUp {
  deviceId: number;
  url: string;
  attempts: number;
  why: string | undefined;
}

interface PerCallback {
  deviceId: number;
  url: string;
  givenUp: number;
  /** The last one's error. */
  why: string | undefined;
}

export interface GivenUpLogOptions {
  /** The message of a line about one delivery (the first), unchanged from the line per delivery of before. */
  first: string;
  /** The message of the summaries. */
  summary: string;
  /** Default Date.now. */
  clock?: () => number;
}

export class GivenUpLog {
  private lastLine: number | null = null;
  private readonly pending = new Map<number, PerCallback>();
  private count = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly clock: () => number;

  constructor(
    private readonly log: Logger,
    private readonly o: GivenUpLogOptions,
  ) {
    this.clock = o.clock ?? Date.now;
  }

  /** A delivery was dropped now. */
  gaveUp(d: GivenUp): void {
    const now = this.clock();
    // After stop() no timer is set: a straggler is logged at once.
    if (this.stopped || (this.count === 0 && (this.lastLine === null || now - this.lastLine >= REPEAT_EVERY_MS))) {
      this.lastLine = now;
      this.log.warn({ deviceId: d.deviceId, url: d.url, attempts: d.attempts, why: d.why, more: "logged at most once a minute, counted per callback" }, this.o.first);
      return;
    }
    const c = this.pending.get(d.deviceId);
    if (c) {
      c.givenUp++;
      c.url = d.url;
      c.why = d.why;
    } else this.pending.set(d.deviceId, { deviceId: d.deviceId, url: d.url, givenUp: 1, why: d.why });
    this.count++;
    this.timer ??= setTimeout(() => this.flush(), Math.max(0, (this.lastLine as number) + REPEAT_EVERY_MS - now));
  }

  /** Logs what is still counted and clears the timer. */
  stop(): void {
    this.stopped = true;
    this.flush();
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.count === 0) return;
    const now = this.clock();
    const all = [...this.pending.values()].sort((a, b) => b.givenUp - a.givenUp);
    this.log.warn(
      {
        givenUp: this.count,
        callbacks: all.length,
        sinceLastLineMs: now - (this.lastLine as number),
        byCallback: all.slice(0, MOST_LISTED),
        ...(all.length > MOST_LISTED ? { callbacksNotListed: all.length - MOST_LISTED } : {}),
      },
      this.o.summary,
    );
    this.lastLine = now;
    this.pending.clear();
    this.count = 0;
  }
}
