/**
 * GET /device/:guid/data: every interval unit (with counts > 1) and every fn against a reference
 * folded here from the same readings; the `t` format; raw readings; defaults of from/to.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asBlock, asUser, expectRefused } from "../helpers/core.js";
import { type TestServer, startTestServer } from "../helpers/server.js";

const NODE = "HISTORY000001";
const GUID = `${NODE}_0_0_2000`; // sandbox: time series, any DA
const NOW = Date.UTC(2024, 5, 15, 12, 34, 56, 789);
const DAY = 86_400_000;
const FNS = ["mean", "sum", "min", "max", "stddev", "ss", "count"] as const;
// The last two are wider than the years since year 0: one bucket starting 0000-01-01.
const INTERVALS = ["1min", "30min", "1hour", "6hour", "1day", "7day", "1month", "3month", "1year", "2year", "5000year", "30000month"];

interface Reading {
  ts: number;
  da: string;
}

/** A small deterministic generator (mulberry32), so a failure can be reproduced. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function makeReadings(): Reading[] {
  const rnd = random(20240615);
  const out: Reading[] = [];
  const span = 2.5 * 365 * DAY;
  for (let i = 0; i < 400; i++) out.push({ ts: Math.floor(NOW - rnd() * span), da: (rnd() * 60 - 20).toFixed(2) });
  for (let i = 0; i < 40; i++) out.push({ ts: Math.floor(NOW - rnd() * DAY), da: (rnd() * 10).toFixed(1) });
  for (let i = 0; i < 12; i++) out.push({ ts: Math.floor(NOW - rnd() * span), da: i % 2 ? "n/a" : "open" });
  // Several readings in one minute and on exact bucket edges.
  out.push({ ts: Date.UTC(2024, 0, 1), da: "5" }, { ts: Date.UTC(2024, 0, 1) + 59_999, da: "7" }, { ts: Date.UTC(2024, 0, 1) - 1, da: "9" });
  return out;
}

/** The first of a month in UTC, with years 0-99 as they are (Date.UTC would make them 19xx). */
function monthStart(year: number, month: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, 1);
  return d.getTime();
}

function bucketOf(ts: number, interval: string): number {
  const m = /^(\d+)(min|hour|day|month|year)$/.exec(interval) as RegExpExecArray;
  const n = Number(m[1]);
  const unit = m[2] as string;
  const d = new Date(ts);
  if (unit === "year") return monthStart(d.getUTCFullYear() - (d.getUTCFullYear() % n), 0);
  if (unit === "month") {
    const months = d.getUTCFullYear() * 12 + d.getUTCMonth();
    const start = months - (months % n);
    return monthStart(Math.floor(start / 12), start % 12);
  }
  const width = n * { min: 60_000, hour: 3_600_000, day: DAY }[unit as "min" | "hour" | "day"];
  return Math.floor(ts / width) * width;
}

function fold(fn: (typeof FNS)[number], das: string[]): number | null {
  if (fn === "count") return das.length;
  const xs = das.map(Number).filter((x) => !Number.isNaN(x));
  if (xs.length === 0) return null;
  const sum = xs.reduce((a, b) => a + b, 0);
  const mean = sum / xs.length;
  switch (fn) {
    case "mean":
      return mean;
    case "sum":
      return sum;
    case "min":
      return Math.min(...xs);
    case "max":
      return Math.max(...xs);
    case "ss":
      return xs.reduce((a, b) => a + b * b, 0);
    case "stddev":
      return Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length);
  }
}

function iso(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 23)}+0000`;
}

function reference(readings: Reading[], from: number, to: number, interval: string, fn: (typeof FNS)[number]): { t: string; v: number }[] {
  const buckets = new Map<number, string[]>();
  for (const r of readings) {
    if (r.ts < from || r.ts > to) continue;
    const b = bucketOf(r.ts, interval);
    buckets.set(b, [...(buckets.get(b) ?? []), r.da]);
  }
  return [...buckets.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([b, das]) => ({ t: iso(b), v: fold(fn, das) }))
    .filter((p): p is { t: string; v: number } => p.v !== null);
}

describe("device history", () => {
  let t: TestServer;
  const readings = makeReadings();
  const data = async (query: string) => asUser<{ data: { t: string; v: number | string }[] }>(t, "GET", `/device/${GUID}/data${query}`);

  beforeAll(async () => {
    t = await startTestServer({ clock: () => NOW });
    const bt = await t.activate(NODE);
    const res = await asBlock(t, NODE, bt, "heartbeat", readings.map((r) => ({ G: "0", V: 0, D: 2000, DA: r.da, TIMESTAMP: r.ts })));
    expect(res.status).toBe(200);
  });
  afterAll(async () => {
    await t.close();
  });

  it.each(INTERVALS)("interval %s folds like the reference, for every fn", async (interval) => {
    const from = NOW - 3 * 365 * DAY;
    for (const fn of FNS) {
      const res = await data(`?from=${from}&to=${NOW}&interval=${interval}&fn=${fn}`);
      expect(res.status).toBe(200);
      const want = reference(readings, from, NOW, interval, fn);
      expect(want.length).toBeGreaterThan(0);
      const got = res.body.data;
      expect(got.map((p) => p.t)).toEqual(want.map((p) => p.t));
      got.forEach((p, i) => {
        const w = (want[i] as { v: number }).v;
        expect(typeof p.v).toBe("number");
        expect(Math.abs((p.v as number) - w)).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(w)));
      });
    }
  });

  it("fn defaults to mean, and a sub-range folds only its readings", async () => {
    const from = Date.UTC(2023, 1, 10, 7);
    const to = Date.UTC(2023, 8, 3, 19);
    const res = await data(`?from=${from}&to=${to}&interval=1month`);
    const want = reference(readings, from, to, "1month", "mean");
    expect(res.body.data.map((p) => p.t)).toEqual(want.map((p) => p.t));
    res.body.data.forEach((p, i) => expect(p.v).toBeCloseTo((want[i] as { v: number }).v, 9));
  });

  it("without interval the raw readings come back in time order, text readings as text", async () => {
    const res = await data(`?from=0&to=${NOW}`);
    const want = [...readings].sort((a, b) => a.ts - b.ts);
    expect(res.body.data.map((p) => p.t)).toEqual(want.map((r) => iso(r.ts)));
    expect(res.body.data.map((p) => String(p.v))).toEqual(want.map((r) => (Number.isNaN(Number(r.da)) ? r.da : String(Number(r.da)))));
    for (const p of res.body.data) {
      expect(p.t).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+0000$/);
      if (p.v === "n/a" || p.v === "open") continue;
      expect(typeof p.v).toBe("number");
    }
  });

  it("from and to are inclusive", async () => {
    const edge = Date.UTC(2024, 0, 1);
    const res = await data(`?from=${edge}&to=${edge + 59_999}`);
    expect(res.body.data).toEqual([
      { t: iso(edge), v: 5 },
      { t: iso(edge + 59_999), v: 7 },
    ]);
  });

  it("defaults: to = now, from = to - 24 h", async () => {
    const lastDay = readings.filter((r) => r.ts >= NOW - DAY && r.ts <= NOW).sort((a, b) => a.ts - b.ts);
    expect(lastDay.length).toBeGreaterThanOrEqual(40);
    const none = await data("");
    expect(none.body.data.map((p) => p.t)).toEqual(lastDay.map((r) => iso(r.ts)));
    const onlyTo = await data(`?to=${NOW - DAY}`);
    const dayBefore = readings.filter((r) => r.ts >= NOW - 2 * DAY && r.ts <= NOW - DAY).sort((a, b) => a.ts - b.ts);
    expect(onlyTo.body.data.map((p) => p.t)).toEqual(dayBefore.map((r) => iso(r.ts)));
    const onlyFrom = await data(`?from=${NOW - 2 * DAY}`);
    expect(onlyFrom.body.data).toHaveLength(readings.filter((r) => r.ts >= NOW - 2 * DAY && r.ts <= NOW).length);
  });

  it("a raw answer holds at most 100,000 readings; a larger range asks for an interval", async () => {
    const bt = await t.activate(NODE);
    const guid = `${NODE}_0_0_10`;
    const base = NOW - 500_000;
    await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 10, DA: "0", TIMESTAMP: base });
    // 100,000 more readings straight into the SQLite table (through the API this would take seconds).
    const db = (t.server.services.store as unknown as { db: import("better-sqlite3").Database }).db;
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
       INSERT INTO readings (device_id, ts, num, da) SELECT (SELECT id FROM devices WHERE guid = ?), ? + i, i % 7, CAST(i % 7 AS TEXT) FROM n`,
    ).run(guid, base);
    const q = (query: string) => asUser<{ data: { t: string; v: number }[] }>(t, "GET", `/device/${guid}/data?${query}`);
    expectRefused(await q(`from=${base}&to=${NOW}`), 400, /100001 readings/, /interval/);
    const folded = await q(`from=${base}&to=${NOW}&interval=1year&fn=count`);
    expect(folded.body.data).toEqual([{ t: iso(Date.UTC(2024, 0, 1)), v: 100_001 }]);
  });

  it("refuses from after to, unknown units and unknown fns, naming them", async () => {
    expectRefused(await data(`?from=${NOW}&to=${NOW - 1}`), 400, /from/, /to/);
    expectRefused(await data("?interval=1week"), 400, /interval/);
    expectRefused(await data("?interval=0day"), 400, /interval/);
    expectRefused(await data("?interval=1day&fn=median"), 400, /fn/);
  });
});
