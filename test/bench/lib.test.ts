import { describe, expect, it } from "vitest";
import { median, percentile, quantile } from "../../bench/lib.js";

describe("median", () => {
  it("is the middle value of an odd count, whatever the input order", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([9, 1, 5, 7, 3])).toBe(5);
    expect(median([7])).toBe(7);
  });

  it("is the mean of the two middle values of an even count", () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([10, 20])).toBe(15);
    expect(median([1.5, 2.5, 3.5, 100, 0.5, 2.0])).toBe(2.25);
  });

  it("is NaN for no values and leaves its input unsorted", () => {
    expect(median([])).toBeNaN();
    const xs = [3, 1, 2, 0];
    median(xs);
    expect(xs).toEqual([3, 1, 2, 0]);
  });
});

describe("quantile", () => {
  it("interpolates between sorted neighbours, whatever the input order", () => {
    expect(quantile([1, 2, 3, 4, 5], 0.25)).toBe(2);
    expect(quantile([1, 2], 0.25)).toBe(1.25);
    expect(quantile([4, 3, 2, 1], 0.75)).toBe(3.25);
    expect(quantile([7], 0.75)).toBe(7);
    expect(quantile([5, 1], 0)).toBe(1);
    expect(quantile([5, 1], 1)).toBe(5);
    expect(quantile([], 0.5)).toBeNaN();
  });
});

describe("percentile", () => {
  it("follows the same rule on sorted values: p50 is the median", () => {
    const sorted = [1, 2, 3, 4];
    expect(percentile(sorted, 50)).toBe(median(sorted));
    expect(percentile(sorted, 50)).toBe(2.5);
    expect(percentile(sorted, 0)).toBe(1);
    expect(percentile(sorted, 100)).toBe(4);
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(hundred, 99)).toBeCloseTo(99.01, 10);
    expect(percentile([], 99)).toBeNaN();
  });

  it("gives Infinity, never NaN, where unanswered requests count as Infinity", () => {
    expect(percentile([1, 2, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY], 90)).toBe(Number.POSITIVE_INFINITY);
    expect(percentile([1, Number.POSITIVE_INFINITY], 0)).toBe(1);
    expect(percentile([1, Number.POSITIVE_INFINITY], 50)).toBe(Number.POSITIVE_INFINITY);
  });
});
