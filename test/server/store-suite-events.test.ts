/**
 * The shared store suite, events and history: domain types, the ingest transaction (device
 * creation, meta patches, block activity, idempotency, order), history folds in UTC calendar
 * buckets, queued commands; every implementation gives the same answers
 * (test/helpers/store-suite.ts).
 */
import { describe, expect, it } from "vitest";
import { type FoldFn, bucketStart, parseInterval } from "../../protocol/history.js";
import type { IngestEvent } from "../../server/store/types.js";
import { NODE, SUITE_STORES, T0, ev, openEach, store, userId } from "../helpers/store-suite.js";

describe.each(SUITE_STORES)("store: $name", (impl) => {
  openEach(impl);

  it("events: devices created on first sight with domain types, last value kept by time, readings in order", async () => {
    const r = await store.events.commit([ev("0", "21.5", { num: 21.5, touch: T0 }), ev("0", "20", { num: 20, ts: T0 - 1000 }), ev("1", "x", { num: null })]);
    expect(r.map((x) => [x.created, x.duplicate])).toEqual([
      [true, false],
      [false, false],
      [true, false],
    ]);
    expect(r[0]?.deviceId).toBe(r[1]?.deviceId);
    const d = await store.devices.byGuid(`${NODE}_0_0_9`);
    expect(d).toMatchObject({ user_id: userId, node_id: NODE, g: "0", v: 0, d: 9, is_silent: false, meta: {}, last_da: "21.5", last_ts: T0, short_name: null });
    expect((await store.devices.list(userId)).map((x) => x.guid)).toEqual([`${NODE}_0_0_9`, `${NODE}_1_0_9`]);
    const raw = await store.history.query(d?.id ?? -1, { from: 0, to: T0, interval: null, fn: "mean" });
    expect(raw).toEqual([
      { t: T0 - 1000, v: 20 },
      { t: T0, v: 21.5 },
    ]);
    expect(await store.history.query(r[2]?.deviceId ?? -1, { from: 0, to: T0, interval: null, fn: "mean" })).toEqual([{ t: T0, v: "x" }]);
    // The touch created the block row (a virtual block) with its activity.
    expect(await store.blocks.get(NODE)).toMatchObject({ user_id: userId, last_active: T0 });
    await store.events.commit([ev("0", "1", { touch: T0 - 5 })]);
    expect((await store.blocks.get(NODE))?.last_active).toBe(T0); // never backwards
  });

  it("events: idempotency keys answer duplicates, within a batch and across batches", async () => {
    const first = await store.events.commit([ev("0", "1", { key: "k1" }), ev("0", "2", { key: "k1" }), ev("0", "3", { key: "k2" })]);
    expect(first.map((x) => x.duplicate)).toEqual([false, true, false]);
    expect(first[1]).toEqual({ deviceId: 0, created: false, duplicate: true });
    const again = await store.events.commit([ev("0", "1", { key: "k2" })]);
    expect(again[0]?.duplicate).toBe(true);
    const id = first[0]?.deviceId ?? -1;
    expect(await store.history.count(id, 0, T0)).toBe(2);
    expect(await store.events.pruneKeys(Date.now() + 1000)).toBe(2);
    expect((await store.events.commit([ev("0", "1", { key: "k1" })]))[0]?.duplicate).toBe(false);
  });

  it("events: a U+0000 in a value, a key or a config payload does not fail the batch", async () => {
    const r = await store.events.commit([
      ev("0", "a\u0000b", { key: "k\u0000" }),
      ev("0", "x", { kind: "config", num: null, meta: { path: ["config", "T"], value: { payload: { s: "\u0000" }, timestamp: 1 } } }),
      ev("1", "fine"),
    ]);
    expect(r.map((x) => x.duplicate)).toEqual([false, false, false]);
    expect(await store.history.count(r[0]?.deviceId ?? -1, 0, T0)).toBe(1);
    expect((await store.events.commit([ev("0", "again", { key: "k\u0000" })]))[0]?.duplicate).toBe(true);
  });

  it("events and devices: meta patches create objects on the way, keep the rest, and take no reading", async () => {
    const cfg = (DA: string, value: unknown, path: string[]): IngestEvent => ev("0", DA, { kind: "config", num: null, meta: { path, value } });
    const [r] = await store.events.commit([cfg("PLUGIN", true, ["plugged"])]);
    await store.events.commit([cfg("IP", { payload: { ip: "10.0.0.7" }, timestamp: 3 }, ["config", "IP"])]);
    await store.events.commit([cfg("NAME", { payload: {}, timestamp: 4 }, ["config", "NAME"])]);
    await store.devices.patchMeta(r?.deviceId ?? -1, { path: ["target"], value: "dir/x" });
    const d = await store.devices.byGuid(`${NODE}_0_0_9`);
    expect(d?.meta).toEqual({ plugged: true, config: { IP: { payload: { ip: "10.0.0.7" }, timestamp: 3 }, NAME: { payload: {}, timestamp: 4 } }, target: "dir/x" });
    expect(d?.last_da).toBeNull();
    expect(await store.history.count(d?.id ?? -1, 0, 10 ** 15)).toBe(0);
    await store.devices.setShortName(d?.id ?? -1, "Lamp");
    expect((await store.devices.byGuid(`${NODE}_0_0_9`))?.short_name).toBe("Lamp");
    await store.devices.remove(d?.id ?? -1);
    expect(await store.devices.list(userId)).toEqual([]);
  });

  /** Every fold over fixed, month and year buckets of readings in [end - span, end], against the reference fold; `edge` a bucket edge to probe. */
  const foldsMatch = async (end: number, span: number, edge: number): Promise<void> => {
    const rnd = (() => {
      let a = 7;
      return () => {
        a = (a * 1103515245 + 12345) % 2 ** 31;
        return a / 2 ** 31;
      };
    })();
    const events: IngestEvent[] = [];
    for (let i = 0; i < 300; i++) {
      const ts = end - Math.floor(rnd() * span);
      const v = Math.round((rnd() * 60 - 20) * 100) / 100;
      events.push(ev("0", String(v), { num: v, ts }));
    }
    events.push(ev("0", "open", { num: null, ts: end - 5 }));
    events.push(ev("0", "5", { num: 5, ts: edge }), ev("0", "6", { num: 6, ts: edge - 1 }));
    const [first] = await store.events.commit(events);
    const id = first?.deviceId ?? -1;
    const from = end - span;
    const fold = (fn: FoldFn, xs: number[], count: number): number => {
      const n = xs.length;
      const sum = xs.reduce((a, b) => a + b, 0);
      const mean = sum / n;
      if (fn === "count") return count;
      if (fn === "sum") return sum;
      if (fn === "mean") return mean;
      if (fn === "min") return Math.min(...xs);
      if (fn === "max") return Math.max(...xs);
      if (fn === "ss") return xs.reduce((a, b) => a + b * b, 0);
      return Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / n);
    };
    for (const text of ["1min", "6hour", "7day", "1month", "3month", "1year", "2year"]) {
      const interval = parseInterval(text);
      if (!interval) throw new Error(text);
      for (const fn of ["mean", "sum", "min", "max", "stddev", "ss", "count"] as const) {
        const buckets = new Map<number, { xs: number[]; count: number }>();
        for (const e of events) {
          if (e.ts < from || e.ts > end) continue;
          if (fn !== "count" && e.num === null) continue;
          const b = bucketStart(e.ts, interval);
          const entry = buckets.get(b) ?? { xs: [], count: 0 };
          if (e.num !== null) entry.xs.push(e.num);
          entry.count++;
          buckets.set(b, entry);
        }
        const expected = [...buckets.entries()].sort((a, b) => a[0] - b[0]).map(([t, x]) => ({ t, v: fold(fn, x.xs, x.count) }));
        const got = await store.history.query(id, { from, to: end, interval, fn });
        expect(got.map((p) => p.t), `${text} ${fn}`).toEqual(expected.map((p) => p.t));
        got.forEach((p, i) => expect(p.v as number, `${text} ${fn} #${i}`).toBeCloseTo(expected[i]?.v as number, 6));
      }
    }
  };

  it("history: every fold over fixed, month and year buckets in UTC, as the reference fold", async () => {
    await foldsMatch(T0, 800 * 86_400_000, Date.UTC(2024, 0, 1));
  });

  it("history: the same folds over the partitions made ahead (this week's days: daily partitions on PostgreSQL by day)", async () => {
    const today = Math.floor(Date.now() / 86_400_000) * 86_400_000;
    await foldsMatch(today + 6 * 86_400_000, 6 * 86_400_000, today + 86_400_000);
  });

  it("commands: add, pending in order, remove, expire", async () => {
    const c = (da: string, expires: number) => ({ node_id: NODE, guid: `${NODE}_0_0_9`, g: "0", v: 0, d: 9, da, created: 1, expires });
    const a = await store.commands.add(c("a", 100));
    const b = await store.commands.add(c("b", 200));
    expect((await store.commands.pending(NODE, 50)).map((x) => [x.id, x.da])).toEqual([
      [a, "a"],
      [b, "b"],
    ]);
    expect((await store.commands.pending(NODE, 150)).map((x) => x.da)).toEqual(["b"]);
    await store.commands.remove([a]);
    expect(await store.commands.expire(300)).toBe(1);
    expect(await store.commands.pending(NODE, 0)).toEqual([]);
  });
});
