/** Latency histograms (HDR): microsecond resolution, reported in milliseconds. */
import { type Histogram, build, decodeFromCompressedBase64, encodeIntoCompressedBase64 } from "hdr-histogram-js";

export interface LatencySummary {
  count: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
  mean: number | null;
}

/**
 * Three significant digits: what the histogram resolves. A bucket's highest value read to the
 * microsecond would show 3 ms as `3.001`.
 */
const round = (ms: number): number => (ms === 0 ? 0 : Number(ms.toPrecision(3)));

/**
 * A percentile to three significant digits, rounded down: HdrHistogram answers the highest value
 * equivalent to the bucket's (9.007 ms for samples of 9.000), which rounded to nearest prints 9.01.
 */
const floor3 = (ms: number): number => {
  if (ms <= 0) return 0;
  const scale = 10 ** (2 - Math.floor(Math.log10(ms)));
  return Number((Math.floor(ms * scale + 1e-9) / scale).toPrecision(3));
};

const histogram = (): Histogram =>
  build({
    bitBucketSize: 32,
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
    autoResize: true,
  });

export class Latency {
  private readonly h: Histogram = histogram();

  /**
   * The histogram as compressed base64 (HdrHistogram's own encoding), for a report that other
   * processes' reports are merged with exactly (`add`), not averaged.
   */
  encode(): string {
    return encodeIntoCompressedBase64(this.h);
  }

  /** A histogram from `encode()`'s text; throws on text that is not one. */
  static decode(text: string): Latency {
    const l = new Latency();
    l.h.add(decodeFromCompressedBase64(text, 32, false));
    return l;
  }

  /** Adds every sample of `other` (a merge of two processes' histograms). */
  add(other: Latency): void {
    this.h.add(other.h);
  }

  /** Records one latency in milliseconds (negative values, from clock skew, count as 0). */
  record(ms: number): void {
    this.h.recordValue(Math.max(0, Math.round(ms * 1000)));
  }

  get count(): number {
    return this.h.totalCount;
  }

  /**
   * The percentile in ms, null without samples. HdrHistogram answers a bucket's highest equivalent
   * value, which can lie past the largest sample (p99 9.01 with a max of 9.00): capped at the max
   * and rounded down to the histogram's three digits.
   */
  percentile(p: number): number | null {
    if (this.h.totalCount === 0) return null;
    return floor3(Math.min(this.h.getValueAtPercentile(p), this.h.maxValue) / 1000);
  }

  summary(): LatencySummary {
    if (this.h.totalCount === 0) return { count: 0, p50: null, p90: null, p99: null, max: null, mean: null };
    return {
      count: this.h.totalCount,
      p50: this.percentile(50),
      p90: this.percentile(90),
      p99: this.percentile(99),
      max: round(this.h.maxValue / 1000),
      mean: round(this.h.mean / 1000),
    };
  }

  reset(): void {
    this.h.reset();
  }
}
