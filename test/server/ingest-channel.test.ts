/**
 * The shared-memory channel between the event loop and the ingest thread (ingest-channel.ts) and
 * the thread's side of it (ingest-thread.ts, ingest-worker.ts): the encoding of events, records
 * that wrap around a small ring, batches larger than the ring, a failed transaction, a dead worker,
 * and a close that drains.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { getPriority, tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { Channel } from "../../server/store/sqlite/ingest-channel.js";
import { IngestThread, workerModule } from "../../server/store/sqlite/ingest-thread.js";
import { openSqliteStore } from "../../server/store/sqlite/index.js";
import type { IngestEvent } from "../../server/store/types.js";
import { dataEvent } from "../helpers/events.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const NODE = "CHANNELNODE01";
const event = (userId: number, G: string, DA: string, extra: Partial<IngestEvent> = {}): IngestEvent =>
  dataEvent(NODE, userId, G, DA, { ts: 1_700_000_000_123, ...extra });

/** A database with the schema and one user, and an ingest thread on it with a ring of `ringBytes`. */
async function setup(ringBytes: number, slots: number): Promise<{ file: string; userId: number; thread: IngestThread }> {
  const dir = mkdtempSync(join(tmpdir(), "blockkit-channel-"));
  dirs.push(dir);
  const store = openSqliteStore({ dataDir: dir, ingestThread: false });
  const user = await store.users.create("u", null, Date.now());
  await store.close();
  const file = join(dir, "blockkit.db");
  return { file, userId: user.id, thread: new IngestThread(workerModule(), file, () => undefined, ringBytes, slots) };
}

const readings = (file: string): number => {
  const db = new Database(file, { readonly: true });
  const n = db.prepare("SELECT (SELECT count(*) FROM readings) + (SELECT count(*) FROM readings_staged)").pluck().get() as number;
  db.close();
  return n;
};

describe("the channel's encoding", () => {
  it("round-trips every field, unicode text, keys, meta patches, touches and null numbers", () => {
    const channel = Channel.create(1 << 16, 64);
    const events: IngestEvent[] = [
      event(7, "0", "21.5"),
      event(2 ** 40, "rf 1", "温度 ☃ 🌡️ \u0000 \ud83d", { key: "ключ-🔑", num: null, V: 1234, D: 1_000_000, ts: 1 }),
      event(3, "0", "PLUGIN", { kind: "config", num: null, meta: { path: ["config", "ü"], value: { payload: { nested: [1, "x"] }, timestamp: 5 } } }),
      event(3, "h", "-0.000001", { kind: "heartbeat", num: -1e-6, touch: 1_700_000_000_999 }),
    ];
    const written = channel.write(5, 8, 1 << 16, events, 0, 64, 42);
    expect(written.count).toBe(events.length);
    expect(written.end % 8).toBe(0);
    const back: IngestEvent[] = [];
    const now = channel.read(5, back);
    expect(now).toBe(42);
    // A lone surrogate is not UTF-8: it comes back as U+FFFD, as JSON.parse of the body would keep it.
    // The config payload does not cross (the meta patch carries what the store applies).
    const expected = events.map((e) => ({ ...e, DA: e.DA.replace("\ud83d", "\ufffd"), payload: undefined }));
    expect(back).toEqual(expected);
  });

  it("round-trips strings copied by charCode and by buf.write: short ASCII, non-ASCII after ASCII, long ones", () => {
    const channel = Channel.create(1 << 16, 64);
    const events: IngestEvent[] = [
      event(1, "A".repeat(64), "abc\u007f"),
      event(1, "B".repeat(65), `${"x".repeat(63)}é`),
      event(1, "g", `21.5°C`, { key: `${"k".repeat(200)}ü` }),
      event(1, "", "", { guid: "🌡️".repeat(40) }),
    ];
    expect(channel.write(0, 0, 1 << 16, events, 0, 64, 1).count).toBe(events.length);
    const back: IngestEvent[] = [];
    channel.read(0, back);
    expect(back).toEqual(events);
  });

  it("writes only what fits before the limit, and at most the count asked for", () => {
    const channel = Channel.create(4096, 64);
    const events = Array.from({ length: 100 }, (_, i) => event(1, String(i), "x".repeat(20)));
    const some = channel.write(0, 0, 1000, events, 0, 100, 1);
    expect(some.count).toBeGreaterThan(0);
    expect(some.count).toBeLessThan(100);
    expect(some.end).toBeLessThanOrEqual(1000);
    expect(channel.write(0, 0, 4096, events, 10, 3, 1).count).toBe(3);
    expect(channel.write(0, 0, 40, events, 0, 100, 1).count).toBe(0);
  });
});

describe("the ingest thread over shared memory", () => {
  it("runs as a batch task (no preemption on wake-up) at the event loop's weight, named blockkit-ingest", async () => {
    const { thread } = await setup(1 << 16, 64);
    try {
      const tid = await thread.started;
      if (process.platform !== "linux") {
        expect(tid).toBeNull();
        return;
      }
      // The worker is a task of this process: SCHED_BATCH at the same nice level as the thread
      // that started it (not 10 levels lower: a tenth of the weight starved it beside busy
      // processes); 10 levels lower only where chrt is missing.
      expect(tid).not.toBeNull();
      expect(tid).not.toBe(process.pid);
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
      expect(readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim()).toBe("blockkit-ingest");
      if (spawnSync("chrt", ["--version"]).status === 0) {
        expect(Number(stat[38])).toBe(3); // SCHED_BATCH
        expect(getPriority(tid as number)).toBe(getPriority());
      } else {
        expect(getPriority(tid as number)).toBe(Math.min(19, getPriority() + 10));
      }
    } finally {
      await thread.close();
    }
  });

  it("commits heartbeats of 1000 readings and 64 KiB through a ring smaller than a batch, wrapping", async () => {
    const { file, userId, thread } = await setup(32 * 1024, 256);
    const heartbeat = (n: number): IngestEvent[] =>
      Array.from({ length: 1000 }, (_, i) => event(userId, String(i % 50), `${n}-${"é".repeat(60)}-${i}`, { kind: "heartbeat", num: null }));
    expect(JSON.stringify(heartbeat(0)).length).toBeGreaterThan(64 * 1024);
    const batches = [heartbeat(1), heartbeat(2), heartbeat(3)];
    const results = await Promise.all(batches.map((b) => thread.commit(b, Date.now())));
    expect(results.map((r) => r.length)).toEqual([1000, 1000, 1000]);
    expect(results[0]?.filter((r) => r.created)).toHaveLength(50);
    expect(results.flat().every((r) => r.deviceId > 0 && !r.duplicate)).toBe(true);
    await thread.close();
    expect(readings(file)).toBe(3000);
    const db = new Database(file, { readonly: true });
    expect(db.prepare("SELECT da FROM readings WHERE da LIKE '2-%-999'").pluck().get()).toBe(`2-${"é".repeat(60)}-999`);
    db.close();
  });

  it("answers duplicates by key", async () => {
    const { thread, userId } = await setup(1 << 16, 64);
    const [first] = await thread.commit([event(userId, "0", "1", { key: "k" })], Date.now());
    const [again] = await thread.commit([event(userId, "0", "1", { key: "k" })], Date.now());
    expect(first).toMatchObject({ created: true, duplicate: false });
    expect(again).toEqual({ deviceId: 0, created: false, duplicate: true });
    await thread.close();
  });

  it("a failed transaction rejects its batch with the error, and the next batch commits", async () => {
    const { file, userId, thread } = await setup(1 << 16, 64);
    // A device for a user that does not exist: the foreign key fails inside the worker's transaction.
    await expect(thread.commit([event(userId, "0", "1"), event(999_999, "1", "2")], Date.now())).rejects.toThrow(/FOREIGN KEY/);
    expect(await thread.commit([event(userId, "0", "3")], Date.now())).toHaveLength(1);
    await thread.close();
    expect(readings(file)).toBe(1);
  });

  it("a worker that dies fails every batch waiting with 503, and every later one", async () => {
    const { userId, thread } = await setup(1 << 16, 64);
    await thread.commit([event(userId, "0", "1")], Date.now());
    const waiting = Array.from({ length: 20 }, (_, i) => thread.commit([event(userId, "0", String(i))], Date.now()));
    const settled = Promise.allSettled(waiting);
    await thread.terminate();
    for (const r of await settled) {
      if (r.status === "rejected") expect(r.reason).toMatchObject({ statusCode: 503 });
    }
    await expect(thread.commit([event(userId, "0", "2")], Date.now())).rejects.toMatchObject({ statusCode: 503 });
    await thread.close();
  });

  it("close waits for every batch accepted, including those waiting for room in the ring", async () => {
    const { file, userId, thread } = await setup(4096, 16);
    const acks = Array.from({ length: 50 }, (_, i) => thread.commit([event(userId, String(i % 5), String(i)), event(userId, "x", String(i))], Date.now()));
    const closed = thread.close();
    await expect(thread.commit([event(userId, "0", "late")], Date.now())).rejects.toMatchObject({ statusCode: 503 });
    await closed;
    expect((await Promise.all(acks)).flat()).toHaveLength(100);
    expect(readings(file)).toBe(100);
  });
});

describe("starting the ingest thread", () => {
  it("runs the worker from the TypeScript source under test, not from a build", () => {
    const url = workerModule();
    expect(decodeURIComponent(url.href)).toContain("server/store/sqlite/ingest-worker.ts");
  });

  it("a worker that cannot open the database rejects `started` (openStore awaits it and fails), and commits fail with 503", async () => {
    const thread = new IngestThread(workerModule(), join(tmpdir(), "blockkit-no-such-dir", "x", "blockkit.db"), () => undefined);
    await expect(thread.started).rejects.toThrow(/directory does not exist|unable to open|SQLITE_CANTOPEN/i);
    await expect(thread.commit([event(1, "0", "1")], Date.now())).rejects.toMatchObject({ statusCode: 503 });
    await thread.close();
  });
});
