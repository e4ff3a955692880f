import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bucketStart, fixedWidthMs, formatPointTime, type Interval, numericValue, parseInterval, utcMonthStart } from "../../protocol/history.js";

const pad = (n: number, w = 2): string => String(n).padStart(w, "0");

/** The spec's `YYYY-MM-DDTHH:MM:SS.mmm+0000`, written from the UTC fields. */
function referenceTime(ms: number): string {
  const d = new Date(ms);
  return (
    `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}+0000`
  );
}

/** End (exclusive) of the bucket that starts at `start`. */
function bucketEnd(start: number, i: Interval): number {
  const d = new Date(start);
  if (i.unit === "year") return Date.UTC(d.getUTCFullYear() + i.count, 0, 1);
  if (i.unit === "month") return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + i.count, 1);
  return start + i.count * { min: 60_000, hour: 3_600_000, day: 86_400_000 }[i.unit];
}

const ts = fc.integer({ min: 946_684_800_000, max: 4_102_444_800_000 }); // 2000..2100
const interval = fc.record({
  count: fc.integer({ min: 1, max: 30 }),
  unit: fc.constantFrom("min" as const, "hour" as const, "day" as const, "month" as const, "year" as const),
});

describe("history intervals", () => {
  it("parses <number><unit> for every unit", () => {
    expect(parseInterval("1min")).toEqual({ count: 1, unit: "min" });
    expect(parseInterval("15min")).toEqual({ count: 15, unit: "min" });
    expect(parseInterval("6hour")).toEqual({ count: 6, unit: "hour" });
    expect(parseInterval("1day")).toEqual({ count: 1, unit: "day" });
    expect(parseInterval("3month")).toEqual({ count: 3, unit: "month" });
    expect(parseInterval("2year")).toEqual({ count: 2, unit: "year" });
  });

  it.each(["0hour", "hour", "1week", "1Hour", "1 hour", "-1day", "1.5day", "1234567min", "", "1dayx"])("refuses %j", (text) => {
    expect(parseInterval(text)).toBeNull();
  });

  it("fixed widths for min/hour/day, none for calendar units", () => {
    expect(fixedWidthMs({ count: 15, unit: "min" })).toBe(900_000);
    expect(fixedWidthMs({ count: 6, unit: "hour" })).toBe(21_600_000);
    expect(fixedWidthMs({ count: 2, unit: "day" })).toBe(172_800_000);
    expect(fixedWidthMs({ count: 1, unit: "month" })).toBeNull();
    expect(fixedWidthMs({ count: 1, unit: "year" })).toBeNull();
  });

  it("a bucket holds its reading and is aligned in UTC (property)", () => {
    fc.assert(
      fc.property(ts, interval, (t, i) => {
        const b = bucketStart(t, i);
        expect(b).toBeLessThanOrEqual(t);
        expect(t).toBeLessThan(bucketEnd(b, i));
        const d = new Date(b);
        if (i.unit === "month" || i.unit === "year") {
          expect([d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds()]).toEqual([1, 0, 0, 0, 0]);
          if (i.unit === "year") expect([d.getUTCMonth(), d.getUTCFullYear() % i.count]).toEqual([0, 0]);
          else expect((d.getUTCFullYear() * 12 + d.getUTCMonth()) % i.count).toBe(0);
        } else {
          expect(b % (fixedWidthMs(i) as number)).toBe(0);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("calendar buckets follow the calendar", () => {
    const t = Date.UTC(2024, 1, 29, 23, 59, 59, 999); // leap day
    expect(bucketStart(t, { count: 1, unit: "month" })).toBe(Date.UTC(2024, 1, 1));
    expect(bucketStart(t, { count: 3, unit: "month" })).toBe(Date.UTC(2024, 0, 1));
    expect(bucketStart(Date.UTC(2024, 4, 3), { count: 3, unit: "month" })).toBe(Date.UTC(2024, 3, 1));
    expect(bucketStart(t, { count: 1, unit: "year" })).toBe(Date.UTC(2024, 0, 1));
    expect(bucketStart(t, { count: 10, unit: "year" })).toBe(Date.UTC(2020, 0, 1));
    expect(bucketStart(t, { count: 1, unit: "day" })).toBe(Date.UTC(2024, 1, 29));
    expect(bucketStart(t, { count: 6, unit: "hour" })).toBe(Date.UTC(2024, 1, 29, 18));
  });
});

describe("buckets wider than the calendar so far", () => {
  it("align on year 0, not on 1900", () => {
    const t = Date.UTC(2024, 6, 1);
    const year0 = new Date("0000-01-01T00:00:00.000Z").getTime();
    expect(bucketStart(t, { count: 5000, unit: "year" })).toBe(year0);
    expect(bucketStart(t, { count: 30000, unit: "month" })).toBe(year0);
    expect(formatPointTime(year0)).toBe("0000-01-01T00:00:00.000+0000");
    expect(utcMonthStart(99, 11)).toBe(new Date("0099-12-01T00:00:00.000Z").getTime());
  });
});

describe("data point time", () => {
  it("is written YYYY-MM-DDTHH:MM:SS.mmm+0000 in UTC", () => {
    expect(formatPointTime(Date.UTC(2013, 2, 4, 5, 6, 7, 8))).toBe("2013-03-04T05:06:07.008+0000");
    expect(formatPointTime(0)).toBe("1970-01-01T00:00:00.000+0000");
    fc.assert(
      fc.property(ts, (t) => {
        expect(formatPointTime(t)).toBe(referenceTime(t));
      }),
      { numRuns: 300 },
    );
  });
});

describe("numeric values of readings", () => {
  it.each([
    ["21.5", 21.5],
    [" 7 ", 7],
    ["-3", -3],
    ["+4.", 4],
    [".5", 0.5],
    ["1e3", 1000],
    [12, 12],
  ])("%j is the number %d", (da, n) => {
    expect(numericValue(da)).toBe(n);
  });

  it.each(["", "abc", "0x10", "1,5", "12abc", "NaN", "Infinity", "1e400", "1.2.3"])("%j is not a number", (da) => {
    expect(numericValue(da)).toBeNull();
  });

  it("non-finite numbers are not numbers", () => {
    expect(numericValue(Number.NaN)).toBeNull();
    expect(numericValue(Number.POSITIVE_INFINITY)).toBeNull();
  });
});
