/**
 * The backstop against rule loops that the cause header cannot show (a webhook to a relay that
 * posts back to a tickle URL without X-Blockkit-Cause): a rule that fires more than `perSecond`
 * times in each of `seconds` consecutive seconds is a runaway. The engine suspends it and records
 * that in its history; a legitimate burst (a button pressed fast, a sensor chattering for a
 * moment) does not last that long.
 */

export interface FiringRateOptions {
  /** Firings allowed in one second. Default 20. */
  maxFiringsPerSecond?: number;
  /** Consecutive seconds over the limit before the rule is suspended. Default 5. */
  hotSeconds?: number;
}

export class FiringRate {
  private second = 0;
  private count = 0;
  /** Consecutive seconds over the limit just before the current one. */
  private streak = 0;

  constructor(
    readonly perSecond: number,
    readonly seconds: number,
  ) {}

  /** Counts a firing at `now` (ms); true when the rule has now been over the limit for `seconds` seconds in a row. */
  fired(now: number): boolean {
    const second = Math.floor(now / 1000);
    if (second !== this.second) {
      this.streak = this.count > this.perSecond && second === this.second + 1 ? this.streak + 1 : 0;
      this.second = second;
      this.count = 0;
    }
    this.count++;
    return this.count > this.perSecond && this.streak + 1 >= this.seconds;
  }

  reset(): void {
    this.second = 0;
    this.count = 0;
    this.streak = 0;
  }

  /** What the rule's history says when it is suspended. */
  describe(): string {
    return `suspended: fired more than ${this.perSecond} times a second for ${this.seconds} seconds in a row (a loop through something that does not pass X-Blockkit-Cause on?); resume it with DELETE /rule/:rid/suspend`;
  }
}
