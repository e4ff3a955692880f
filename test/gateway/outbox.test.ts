/** The outbox contract, run against the in-memory and the SQLite implementation; the backoff. */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Backoff, sleep } from "../../gateway/agent/backoff.js";
import { MemoryOutbox } from "../../gateway/agent/memory.js";
import { SqliteOutbox } from "../../gateway/agent/sqlite-outbox.js";
import type { NewOutboxEntry, Outbox, OutboxLimits } from "../../gateway/agent/types.js";
import { tempDir } from "./helpers.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  vi.useRealTimers();
});

function entry(i: number, ts = 1_700_000_000_000 + i): NewOutboxEntry {
  return { kind: "data", G: "1", V: 0, D: 9, DA: String(i), value: null, ts, key: `k${i}` };
}

const impls: [string, (limits?: Partial<OutboxLimits>) => Outbox][] = [
  ["memory", (l) => new MemoryOutbox(l)],
  [
    "sqlite",
    (l) => {
      const d = tempDir("outbox");
      dirs.push(d);
      return new SqliteOutbox(join(d, "outbox.db"), l);
    },
  ],
];

describe.each(impls)("%s outbox", (_name, make) => {
  it("keeps order and removes only acknowledged entries", () => {
    const o = make();
    o.append([entry(1), entry(2), entry(3)]);
    const got = o.peek(10);
    expect(got.map((e) => e.DA)).toEqual(["1", "2", "3"]);
    o.ack([got[1]?.id as number]);
    expect(o.peek(10).map((e) => e.DA)).toEqual(["1", "3"]);
    expect(o.stats().rows).toBe(2);
    o.close();
  });

  it("reads past the entries still in flight (peek after an id), and acknowledges a run of ids at once", () => {
    const o = make();
    o.append([1, 2, 3, 4, 5].map((i) => entry(i)));
    const first = o.peek(2);
    expect(first.map((e) => e.DA)).toEqual(["1", "2"]);
    expect(o.peek(2, first[1]?.id).map((e) => e.DA)).toEqual(["3", "4"]);
    expect(o.peek(10, (first[1]?.id as number) + 10)).toEqual([]);
    o.ack(o.peek(3).map((e) => e.id));
    expect(o.peek(10).map((e) => e.DA)).toEqual(["4", "5"]);
    expect(o.stats().rows).toBe(2);
    o.close();
  });

  it("acknowledges the oldest in order, later ones out of order, and keeps working once emptied", () => {
    const o = make();
    o.append([1, 2, 3, 4, 5, 6].map((i) => entry(i)));
    const ids = o.peek(10).map((e) => e.id);
    // The oldest two in order, then the fifth with them in one call.
    o.ack([ids[0] as number, ids[1] as number, ids[4] as number]);
    expect(o.peek(10).map((e) => e.DA)).toEqual(["3", "4", "6"]);
    o.ack([ids[5] as number, ids[2] as number]);
    expect(o.peek(10).map((e) => e.DA)).toEqual(["4"]);
    o.ack([ids[3] as number]);
    expect(o.stats().rows).toBe(0);
    expect(o.stats().bytes).toBe(0);
    o.append([entry(7), entry(8)]);
    expect(o.peek(10).map((e) => e.DA)).toEqual(["7", "8"]);
    o.ack(o.peek(1).map((e) => e.id));
    expect(o.peek(10).map((e) => e.DA)).toEqual(["8"]);
    expect(o.stats().rows).toBe(1);
    o.close();
  });

  it("drops the oldest past the row and byte bounds and counts the drops", () => {
    const o = make({ maxRows: 5 });
    expect(o.append([1, 2, 3, 4, 5, 6, 7].map((i) => entry(i)))).toBe(2);
    expect(o.peek(10).map((e) => e.DA)).toEqual(["3", "4", "5", "6", "7"]);
    expect(o.stats().dropped).toBe(2);
    const b = make({ maxBytes: 30 });
    // Each entry is 1 (G) + 2 (DA) + 3 (key) = 6 bytes.
    b.append([10, 11, 12, 13, 14, 15, 16].map((i) => entry(i)));
    expect(b.stats().bytes).toBeLessThanOrEqual(30);
    expect(b.peek(10).map((e) => e.DA)).toEqual(["12", "13", "14", "15", "16"]);
    expect(b.stats().dropped).toBe(2);
    o.close();
    b.close();
  });

  it("expires entries past the age bound", () => {
    const o = make({ maxAgeMs: 1000 });
    o.append([entry(1, 1_000), entry(2, 5_000), entry(3, 9_000)]);
    expect(o.expire(8_500)).toBe(2);
    expect(o.peek(10).map((e) => e.DA)).toEqual(["3"]);
    expect(o.stats().dropped).toBe(2);
    o.close();
  });
});

describe("MemoryOutbox restore (the simulator's lean path)", () => {
  it("puts an entry of a reserved id back before the entries appended since, counting its bytes", () => {
    const o = new MemoryOutbox();
    o.append([entry(1)]);
    o.ack([1]);
    const id = o.reserve();
    o.append([entry(3), entry(4)]);
    const before = o.stats().bytes;
    o.restore({ ...entry(2), id });
    expect(o.peek(10).map((e) => e.DA)).toEqual(["2", "3", "4"]);
    expect(o.stats().bytes).toBe(before + 1 + 1 + 2);
    expect(o.rows).toBe(3);
    // After acknowledgements moved the head: into the freed slot in front; between otherwise.
    const id2 = o.reserve();
    o.append([entry(6)]);
    o.ack(o.peek(3).map((e) => e.id));
    o.restore({ ...entry(5), id: id2 });
    expect(o.peek(10).map((e) => e.DA)).toEqual(["5", "6"]);
    const id3 = o.reserve();
    o.append([entry(8)]);
    o.restore({ ...entry(7), id: id3 });
    expect(o.peek(10).map((e) => e.DA)).toEqual(["5", "6", "7", "8"]);
    o.ack(o.peek(10).map((e) => e.id));
    expect(o.stats()).toMatchObject({ rows: 0, bytes: 0 });
  });
});

describe("SqliteOutbox durability", () => {
  it("keeps entries and the drop counter across reopening", () => {
    const d = tempDir("outbox");
    dirs.push(d);
    const file = join(d, "outbox.db");
    const a = new SqliteOutbox(file, { maxRows: 3 });
    a.append([1, 2, 3, 4].map((i) => entry(i)));
    a.ack([a.peek(1)[0]?.id as number]);
    a.close();
    const b = new SqliteOutbox(file, { maxRows: 3 });
    expect(b.peek(10).map((e) => [e.DA, e.key])).toEqual([
      ["3", "k3"],
      ["4", "k4"],
    ]);
    expect(b.stats()).toMatchObject({ rows: 2, dropped: 1 });
    b.close();
  });
});

describe("Backoff", () => {
  it("grows the ceiling from 1 s to 2 min with full jitter", () => {
    const b = new Backoff({ random: () => 0.999999, clock: () => 0 });
    const delays = Array.from({ length: 10 }, () => b.fail());
    expect(delays.map((d) => Math.round(d / 1000))).toEqual([1, 2, 4, 8, 16, 32, 64, 120, 120, 120]);
    const low = new Backoff({ random: () => 0 });
    expect(low.fail()).toBe(0);
  });

  it("resets only after 30 s of health", () => {
    let now = 0;
    const b = new Backoff({ random: () => 0.5, clock: () => now });
    b.fail();
    b.fail();
    b.fail();
    b.succeed();
    now += 10_000;
    expect(b.fail()).toBe(4000); // not healthy for long enough: the count goes on (ceiling 8 s)
    b.succeed();
    now += 30_000;
    b.succeed();
    expect(b.fail()).toBe(500);
  });

  it("sleep ends on its timer or on abort", async () => {
    vi.useFakeTimers();
    let done = false;
    const p = sleep(2000).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(1999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await p;
    expect(done).toBe(true);
    const ac = new AbortController();
    const q = sleep(60_000, ac.signal);
    ac.abort();
    await q;
  });
});

describe("splitRuns", () => {
  it("cuts readings into batches, keeps a config event alone and never lets it be overtaken", async () => {
    const { splitRuns } = await import("../../gateway/agent/uplink.js");
    const e = (id: number, kind: "data" | "config" = "data") => ({ ...entry(id), id, kind });
    const ids = (runs: { id: number }[][]) => runs.map((r) => r.map((x) => x.id));
    expect(ids(splitRuns([1, 2, 3, 4, 5].map((i) => e(i)), 2, 2))).toEqual([[1, 2], [3, 4]]);
    expect(ids(splitRuns([e(1), e(2), e(3, "config"), e(4)], 10, 3))).toEqual([[1, 2]]);
    expect(ids(splitRuns([e(1, "config"), e(2)], 10, 3))).toEqual([[1]]);
    const big = Array.from({ length: 1000 }, (_, i) => ({ ...e(i), DA: "x".repeat(100) }));
    const runs = splitRuns(big, 1000, 1);
    expect(runs[0]?.length).toBeLessThan(1000); // capped by bytes under the server's 64 KiB body limit
    expect(JSON.stringify(runs[0]).length).toBeLessThan(64 * 1024);
  });
});
