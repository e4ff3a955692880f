/**
 * Readings partitions by day, week or month on a real PostgreSQL (BLOCKKIT_REQUIRE_PG=1 in CI): the
 * bucket boundaries in UTC, partitions made ahead, old timestamps in month gaps, retention dropping
 * exactly the partitions that end before it, and a database made with months: another interval is
 * refused until `change` (blockkit migrate) records it, after which new partitions follow it without
 * overlap. The range arithmetic is checked without a database.
 */
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../../server/store/index.js";
import { createPool } from "../../server/store/postgres/db.js";
import { migratePostgres } from "../../server/store/postgres/index.js";
import { bucketOf, gaps, parseBound, partitionName } from "../../server/store/postgres/partition-ranges.js";
import { ReadingPartitions, listPartitions } from "../../server/store/postgres/partitions.js";
import { dataEvent } from "../helpers/events.js";
import { PG_AVAILABLE, pgSchemaUrl } from "../helpers/pg.js";

const at = (iso: string): number => Date.parse(iso);

describe("partition ranges", () => {
  it("buckets days, weeks from Monday and calendar months in UTC", () => {
    expect(bucketOf("day", at("2024-01-31T23:59:59.999Z"))).toEqual([at("2024-01-31T00:00:00Z"), at("2024-02-01T00:00:00Z")]);
    expect(bucketOf("day", at("2024-02-01T00:00:00Z"))[0]).toBe(at("2024-02-01T00:00:00Z"));
    // 2024-03-03 is a Sunday, 2024-03-04 a Monday.
    expect(bucketOf("week", at("2024-03-03T23:59:59.999Z"))).toEqual([at("2024-02-26T00:00:00Z"), at("2024-03-04T00:00:00Z")]);
    expect(bucketOf("week", at("2024-03-04T00:00:00Z"))).toEqual([at("2024-03-04T00:00:00Z"), at("2024-03-11T00:00:00Z")]);
    expect(bucketOf("week", at("1969-12-31T12:00:00Z"))).toEqual([at("1969-12-29T00:00:00Z"), at("1970-01-05T00:00:00Z")]);
    expect(bucketOf("month", at("2024-12-31T23:59:59.999Z"))).toEqual([at("2024-12-01T00:00:00Z"), at("2025-01-01T00:00:00Z")]);
  });

  it("fills only the gaps, and names a partition by its start", () => {
    const month: [number, number] = [at("2024-03-01T00:00:00Z"), at("2024-04-01T00:00:00Z")];
    const days: [number, number][] = [
      [at("2024-03-05T00:00:00Z"), at("2024-03-06T00:00:00Z")],
      [at("2024-02-20T00:00:00Z"), at("2024-03-02T00:00:00Z")],
    ];
    expect(gaps(month, days)).toEqual([
      [at("2024-03-02T00:00:00Z"), at("2024-03-05T00:00:00Z")],
      [at("2024-03-06T00:00:00Z"), at("2024-04-01T00:00:00Z")],
    ]);
    expect(gaps(month, [month])).toEqual([]);
    expect(partitionName(month)).toBe("readings_p202403");
    expect(partitionName(days[0] as [number, number])).toBe("readings_p20240305");
    expect(partitionName([at("2024-03-05T06:00:00Z"), at("2024-03-06T00:00:00Z")])).toBe("readings_p20240305_060000");
    expect(parseBound("FOR VALUES FROM ('1709596800000') TO ('1709683200000')")).toEqual([1709596800000, 1709683200000]);
    expect(parseBound("DEFAULT")).toBeNull();
  });
});

describe.skipIf(!PG_AVAILABLE)("readings partitions on PostgreSQL", () => {
  let db: ReturnType<typeof pgSchemaUrl>;
  let pool: pg.Pool;
  beforeEach(async () => {
    db = pgSchemaUrl();
    pool = createPool({ url: db.url, max: 2 });
    await migratePostgres(pool, db.schema);
  });
  afterEach(async () => {
    await pool.end();
    await db.drop();
  });

  const names = async (): Promise<string[]> => (await listPartitions(pool)).sort((a, b) => a.range[0] - b.range[0]).map((p) => p.name);
  /** Inserts readings at these times (through the parent table) and returns the partition each landed in. */
  const insert = async (parts: ReadingPartitions, times: number[]): Promise<string[]> => {
    await parts.ensureFor(times);
    const r = await pool.query<{ p: string }>(
      "INSERT INTO readings (device_id, ts, num, da) SELECT 1, t, 0, '0' FROM unnest($1::bigint[]) AS x(t) RETURNING tableoid::regclass::text AS p",
      [times],
    );
    return r.rows.map((x) => x.p.replace(/^.*\./, ""));
  };
  const noOverlap = async (): Promise<void> => {
    const ranges = (await listPartitions(pool)).map((p) => p.range).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < ranges.length; i++) expect((ranges[i] as [number, number])[0]).toBeGreaterThanOrEqual((ranges[i - 1] as [number, number])[1]);
  };

  it("by day: made ahead, split at midnight UTC, old readings in a month's gap, retention drops what ended before it", async () => {
    const now = at("2024-01-31T12:00:00Z");
    const parts = new ReadingPartitions(pool, { interval: "day" });
    await parts.prepare(now);
    expect(parts.interval).toBe("day");
    expect(await names()).toEqual(["readings_p20240131", ...[1, 2, 3, 4, 5, 6, 7].map((d) => `readings_p2024020${d}`)]);
    expect(await insert(parts, [at("2024-01-31T23:59:59.999Z"), at("2024-02-01T00:00:00.000Z")])).toEqual(["readings_p20240131", "readings_p20240201"]);
    // A reading from before the current day, where no partition is: the rest of its month, not a day.
    expect(await insert(parts, [at("2024-01-10T08:00:00Z"), at("2001-03-15T00:00:00Z")])).toEqual(["readings_p20240101", "readings_p200103"]);
    expect((await listPartitions(pool)).find((p) => p.name === "readings_p20240101")?.range).toEqual([at("2024-01-01T00:00:00Z"), at("2024-01-31T00:00:00Z")]);
    await noOverlap();

    // Two days later with a 2-day retention: everything that ended by Feb 1 12:00 goes, Feb 1 stays.
    const later = new ReadingPartitions(pool, { interval: "day", retentionMs: 2 * 86_400_000 });
    await later.prepare(at("2024-02-03T12:00:00Z"));
    const left = await names();
    expect(left[0]).toBe("readings_p20240201");
    expect(left).not.toContain("readings_p20240131");
    expect(left).toContain("readings_p20240210"); // made ahead from Feb 3
    expect(later.stats.dropped).toBe(3);
    const rows = await pool.query<{ ts: string }>("SELECT ts FROM readings ORDER BY ts");
    expect(rows.rows.map((r) => Number(r.ts))).toEqual([at("2024-02-01T00:00:00.000Z")]);
  });

  it("by week: split at Monday 00:00 UTC", async () => {
    const parts = new ReadingPartitions(pool, { interval: "week" });
    await parts.prepare(at("2024-03-03T12:00:00Z"));
    expect(await names()).toEqual(["readings_p20240226", "readings_p20240304", "readings_p20240311"]);
    expect(await insert(parts, [at("2024-03-03T23:59:59.999Z"), at("2024-03-04T00:00:00Z")])).toEqual(["readings_p20240226", "readings_p20240304"]);
  });

  it("a database made with months refuses days until changed; then days follow the months without overlap", async () => {
    const months = new ReadingPartitions(pool, {});
    await months.prepare(at("2024-01-15T12:00:00Z"));
    expect(await names()).toEqual(["readings_p202401", "readings_p202402", "readings_p202403"]);
    expect(await insert(months, [at("2024-02-10T00:00:00Z")])).toEqual(["readings_p202402"]); // Feb is not empty

    await expect(new ReadingPartitions(pool, { interval: "day" }).prepare(at("2024-01-15T12:00:00Z"))).rejects.toThrow(
      /partitioned by month; this server was started with --partition-interval day\. .*blockkit migrate --db URL --partition-interval day/,
    );
    // A database whose partitions predate the recorded interval was monthly: the same answer.
    await pool.query("DELETE FROM server_keys");
    await expect(new ReadingPartitions(pool, { interval: "week" }).prepare(at("2024-01-15T12:00:00Z"))).rejects.toThrow(/partitioned by month/);

    const changed = new ReadingPartitions(pool, { interval: "day", change: true });
    await changed.prepare(at("2024-01-15T12:00:00Z"));
    // The current month and the one holding a reading stay; the empty March is replaced (by days, when due).
    expect(await names()).toEqual(["readings_p202401", "readings_p202402"]);
    // A server without the option now follows the database: days from where the months end.
    const follower = new ReadingPartitions(pool, {});
    await follower.prepare(at("2024-02-28T12:00:00Z"));
    expect(follower.interval).toBe("day");
    expect((await names()).slice(0, 4)).toEqual(["readings_p202401", "readings_p202402", "readings_p20240301", "readings_p20240302"]);
    expect(await insert(follower, [at("2024-02-29T23:59:59.999Z"), at("2024-03-01T00:00:00Z")])).toEqual(["readings_p202402", "readings_p20240301"]);
    await noOverlap();
  });

  it("an instance running with months takes up a change to days at its next hourly check, without undoing it", async () => {
    const running = new ReadingPartitions(pool, {});
    await running.prepare(at("2024-01-15T12:00:00Z"));
    await new ReadingPartitions(pool, { interval: "day", change: true }).prepare(at("2024-01-15T12:00:00Z"));
    expect(await names()).toEqual(["readings_p202401"]); // the empty February and March are gone
    await running.maintain(at("2024-01-30T12:00:00Z"));
    expect(running.interval).toBe("day");
    expect(await names()).toEqual(["readings_p202401", ...[1, 2, 3, 4, 5, 6].map((d) => `readings_p2024020${d}`)]);
    await noOverlap();
  });

  it("a partition dropped under a running store (another instance's retention) fails one batch, not every batch until the next hour", async () => {
    const store = await openStore(db.url, { poolSize: 2 });
    try {
      const userId = (await store.users.create("alice", "hash", 1)).id;
      const ts = Date.now();
      await store.events.commit([dataEvent("PARTSNODE0001", userId, "0", "1", { ts })]);
      const [own] = (await listPartitions(pool)).filter((p) => ts >= p.range[0] && ts < p.range[1]);
      await pool.query(`DROP TABLE ${own?.name}`);
      await expect(store.events.commit([dataEvent("PARTSNODE0001", userId, "0", "2", { ts })])).rejects.toThrow(/no partition/);
      const [again] = await store.events.commit([dataEvent("PARTSNODE0001", userId, "0", "3", { ts })]);
      expect(again?.duplicate).toBe(false);
    } finally {
      await store.close();
    }
  });
});
