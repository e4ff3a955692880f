/**
 * The measured time of a run (runner.ts): it opens when the run proper starts (after the ramp and
 * the warm-up), leaves out the pauses, and is fixed when the drain starts (the drain is not
 * measured); the rate of acknowledged events over it. Apart from the runner, which walks the
 * phases, so that the one definition of "measured" that the progress lines, the TUI and the report
 * share reads on its own.
 */
import type { Metrics } from "./metrics/metrics.js";

export class MeasuredTime {
  private measureStart: number | null = null;
  private pausedTotal = 0;
  private pausedSince: number | null = null;
  private ackedAtStart = 0;
  /** The measured window's figures, fixed when the drain starts (the drain is not measured). */
  private measured: { ms: number; acked: number } | null = null;

  constructor(
    private readonly metrics: Metrics,
    private readonly clock: () => number,
  ) {}

  /** The run proper starts: the measured time begins now, and so do its acknowledged events. */
  open(): void {
    this.measureStart = this.clock();
    this.ackedAtStart = this.metrics.counters.events_acked;
  }

  /** A pause starts at `at` (ms): its time is not measured. */
  pause(at: number): void {
    this.pausedSince = at;
  }

  resume(): void {
    if (this.pausedSince !== null) this.pausedTotal += this.clock() - this.pausedSince;
    this.pausedSince = null;
  }

  measuredMs(): number {
    if (this.measureStart === null) return 0;
    const now = this.clock();
    return now - this.measureStart - this.pausedTotal - (this.pausedSince !== null ? now - this.pausedSince : 0);
  }

  /**
   * Events acknowledged per second over the measured window (pauses excluded; before it starts,
   * since the run started at `startedAt`). The progress lines, the TUI header and the report share
   * this one definition, so the summary's rate is the last progress line's.
   */
  ackRate(startedAt: number): number {
    const acked = this.measured?.acked ?? (this.measureStart === null ? this.metrics.counters.events_acked : this.metrics.counters.events_acked - this.ackedAtStart);
    const ms = this.measured?.ms ?? (this.measureStart === null ? this.clock() - startedAt : this.measuredMs());
    return ms > 0 ? Math.round((acked / ms) * 1e5) / 100 : 0;
  }

  /** The drain starts: the window's figures are fixed at `measuredMs`; returns the events acknowledged in it. */
  fix(measuredMs: number): number {
    const measuredAcked = this.measureStart === null ? 0 : this.metrics.counters.events_acked - this.ackedAtStart;
    this.measured = { ms: measuredMs, acked: measuredAcked };
    return measuredAcked;
  }
}
