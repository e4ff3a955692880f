/**
 * The store's ingest path: readings staged in an unindexed table and moved into `readings` in bulk
 * (staging.ts), the ingest thread (ingest-thread.ts) that commits and flushes beside the event loop,
 * and the pipelined group commit of the Ingest service.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { Ingest } from "../../server/services/ingest.js";
import { migrate, openSqliteStore } from "../../server/store/sqlite/index.js";
import { ReadingsStaging, WAL_AUTOCHECKPOINT_PAGES } from "../../server/store/sqlite/staging.js";
import type { IngestEvent } from "../../server/store/types.js";
import { dataEvent } from "../helpers/events.js";

const dirs: string[] = [];
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), "blockkit-ingest-path-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const NODE = "INGESTPATH001";
const event = (userId: number, G: string, i: number, ts = Date.now()): IngestEvent => dataEvent(NODE, userId, G, String(i), { ts });

describe("staged readings", () => {
  const staged = (db: Database.Database): number => db.prepare("SELECT count(*) FROM readings_staged").pluck().get() as number;
  const moved = (db: Database.Database): number => db.prepare("SELECT count(*) FROM readings").pluck().get() as number;

  it("moves staged rows into readings sorted by device and time, once, in one transaction", () => {
    const db = new Database(join(tempDir(), "s.db"));
    migrate(db);
    const staging = new ReadingsStaging(db, { threshold: 1_000_000, intervalMs: 0 });
    db.transaction(() => {
      for (let i = 0; i < 30; i++) staging.add(1 + (i % 3), 1000 - i, i, String(i));
    })();
    staging.committed(30);
    expect(staged(db)).toBe(30);
    expect(moved(db)).toBe(0);
    staging.flush();
    expect(staged(db)).toBe(0);
    const rows = db.prepare("SELECT device_id, ts FROM readings ORDER BY rowid").all() as { device_id: number; ts: number }[];
    expect(rows).toHaveLength(30);
    const sorted = [...rows].sort((a, b) => a.device_id - b.device_id || a.ts - b.ts);
    expect(rows).toEqual(sorted);
    expect(staging.stats).toMatchObject({ moves: 1, moved: 30 });
    staging.flush(); // nothing pending: no transaction
    expect(staging.stats.moves).toBe(1);
    staging.close();
    db.close();
  });

  it("moves on the next turn once the threshold is reached", async () => {
    const db = new Database(join(tempDir(), "s.db"));
    migrate(db);
    const staging = new ReadingsStaging(db, { threshold: 10, intervalMs: 0 });
    for (let i = 0; i < 9; i++) staging.add(1, i, i, String(i));
    staging.committed(9);
    await new Promise((resolve) => setImmediate(resolve));
    expect(staged(db)).toBe(9);
    staging.add(1, 9, 9, "9");
    staging.committed(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(staged(db)).toBe(0);
    expect(moved(db)).toBe(10);
    staging.close();
    db.close();
  });

  it("rows left staged by a crash are found by the history after the next start", async () => {
    const dir = tempDir();
    const store = openSqliteStore({ dataDir: dir, ingestThread: false });
    const user = await store.users.create("u", null, Date.now());
    await store.events.commit([event(user.id, "0", 1), event(user.id, "0", 2)]);
    const deviceId = (await store.devices.byGuid(`${NODE}_0_0_9`))?.id ?? -1;
    // A crash: the process ends without the store's close() (which would move the rows).
    store.db.close();
    const raw = new Database(join(dir, "blockkit.db"));
    expect(staged(raw)).toBe(2);
    raw.close();
    const again = openSqliteStore({ dataDir: dir });
    expect(await again.history.count(deviceId, 0, Date.now())).toBe(2);
    expect(staged(again.db)).toBe(0);
    await again.close();
  });

  it.each([false, true])("deleting a device or a block also deletes its staged readings (ingest thread: %s)", async (ingestThread) => {
    const store = openSqliteStore({ dataDir: tempDir(), ingestThread });
    expect(store.ingestThread !== null).toBe(ingestThread);
    const user = await store.users.create("u", null, Date.now());
    await store.events.commit([event(user.id, "0", 1), event(user.id, "1", 2)]);
    const id0 = (await store.devices.byGuid(`${NODE}_0_0_9`))?.id ?? -1;
    await store.devices.remove(id0);
    expect(staged(store.db) + moved(store.db)).toBe(1);
    await store.blocks.remove(NODE);
    expect(staged(store.db) + moved(store.db)).toBe(0);
    await store.close();
  });
});

describe("commits on the main connection", () => {
  it("a :memory: store commits on its own connection (no ingest thread), at synchronous=FULL", async () => {
    const store = openSqliteStore({ dataDir: ":memory:" });
    expect(store.ingestThread).toBeNull();
    const user = await store.users.create("u", null, Date.now());
    expect(await store.events.commit([event(user.id, "0", 1)])).toHaveLength(1);
    expect(store.db.pragma("synchronous", { simple: true })).toBe(2);
    await store.close();
  });

  it("leaves every other transaction of the store at synchronous=FULL", async () => {
    const dir = tempDir();
    mkdirSync(dir, { recursive: true });
    const store = openSqliteStore({ dataDir: dir, ingestThread: false });
    const user = await store.users.create("u", null, Date.now());
    await store.events.commit([event(user.id, "0", 1)]);
    expect(store.db.pragma("synchronous", { simple: true })).toBe(2);
    await store.close();
  });
});

describe("pipelined group commit", () => {
  it("acknowledges every event of batches submitted during flushes once, and tells listeners in commit order", async () => {
    const dir = tempDir();
    const store = openSqliteStore({ dataDir: dir });
    const user = await store.users.create("u", null, Date.now());
    const ingest = new Ingest(store, pino({ level: "silent" }));
    const heard: string[] = [];
    ingest.onCommitted((events) => heard.push(...events.map((e) => e.DA)));
    ingest.start();
    const acks: Promise<unknown>[] = [];
    // Five turns of the event loop, ten submitters each: batches overlap their flushes.
    for (let turn = 0; turn < 5; turn++) {
      for (let i = 0; i < 10; i++) acks.push(ingest.submit([event(user.id, String(i), turn * 10 + i, 1_700_000_000_000 + turn * 10 + i)]));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(acks);
    expect(ingest.stats.events).toBe(50);
    expect(heard).toEqual(Array.from({ length: 50 }, (_, i) => String(i)));
    await ingest.stop();
    await store.close();
    const again = openSqliteStore({ dataDir: dir });
    let total = 0;
    for (let i = 0; i < 10; i++) {
      const id = (await again.devices.byGuid(`${NODE}_${i}_0_9`))?.id ?? -1;
      total += await again.history.count(id, 0, Date.now());
    }
    expect(total).toBe(50);
    await again.close();
  });
});

describe("the ingest thread", () => {
  it("commits on its own connection: results, devices, history, and the staged rows moved at close", async () => {
    const dir = tempDir();
    const store = openSqliteStore({ dataDir: dir });
    expect(store.ingestThread).not.toBeNull();
    const user = await store.users.create("u", null, Date.now());
    const first = await store.events.commit([event(user.id, "0", 1), event(user.id, "0", 2), { ...event(user.id, "1", 3), key: "k1" }]);
    expect(first.map((r) => r.created)).toEqual([true, false, true]);
    const again = await store.events.commit([{ ...event(user.id, "1", 3), key: "k1" }]);
    expect(again).toEqual([{ deviceId: 0, created: false, duplicate: true }]);
    const device = await store.devices.byGuid(`${NODE}_0_0_9`);
    expect(device?.last_da).toBe("2");
    expect(await store.history.count(device?.id ?? -1, 0, Date.now())).toBe(2);
    await store.events.commit([event(user.id, "0", 4)]);
    await store.close();
    const raw = new Database(join(dir, "blockkit.db"), { readonly: true });
    expect(raw.prepare("SELECT count(*) FROM readings_staged").pluck().get()).toBe(0);
    expect(raw.prepare("SELECT count(*) FROM readings").pluck().get()).toBe(4);
    raw.close();
  });

  it("a device deleted between two batches is created again by the next one", async () => {
    const store = openSqliteStore({ dataDir: tempDir() });
    const user = await store.users.create("u", null, Date.now());
    const [r] = await store.events.commit([event(user.id, "0", 1)]);
    await store.devices.remove(r?.deviceId ?? -1);
    expect(await store.devices.byGuid(`${NODE}_0_0_9`)).toBeNull();
    const [again] = await store.events.commit([event(user.id, "0", 2)]);
    expect(again?.created).toBe(true);
    const device = await store.devices.byGuid(`${NODE}_0_0_9`);
    expect(device?.id).toBe(again?.deviceId);
    expect(await store.history.count(device?.id ?? -1, 0, Date.now())).toBe(1);
    await store.close();
  });

  it("checkpoints the WAL only past 10,000 pages, on the thread's connection and the store's", async () => {
    const dir = tempDir();
    const store = openSqliteStore({ dataDir: dir });
    expect(store.db.pragma("wal_autocheckpoint", { simple: true })).toBe(WAL_AUTOCHECKPOINT_PAGES);
    const user = await store.users.create("u", null, Date.now());
    const pageSize = store.db.pragma("page_size", { simple: true }) as number;
    // About 16 MB of staged readings (and as much again when they move): over 4,000 pages of WAL.
    // At SQLite's default (1,000 pages) the thread's commits checkpoint it and start it over, so the
    // file never grows far past 1,000 pages and one transaction.
    const da = "x".repeat(2000);
    for (let c = 0; c < 80; c++) await store.events.commit(Array.from({ length: 100 }, (_, i) => event(user.id, String(i), 0, 1_700_000_000_000 + c * 100 + i)).map((e) => ({ ...e, DA: da, num: null })));
    const walPages = statSync(join(dir, "blockkit.db-wal")).size / (pageSize + 24);
    expect(walPages).toBeGreaterThan(4000);
    expect(walPages).toBeLessThan(WAL_AUTOCHECKPOINT_PAGES + 2000);
    await store.close();
  });

  it("after the thread dies, commits fail with 503 and the store stays readable", async () => {
    const store = openSqliteStore({ dataDir: tempDir(), onError: () => undefined });
    const user = await store.users.create("u", null, Date.now());
    await store.events.commit([event(user.id, "0", 1)]);
    await store.ingestThread?.terminate();
    await expect(store.events.commit([event(user.id, "0", 2)])).rejects.toMatchObject({ statusCode: 503 });
    const device = await store.devices.byGuid(`${NODE}_0_0_9`);
    expect(await store.history.count(device?.id ?? -1, 0, Date.now())).toBe(1);
    await store.close();
  });
});
