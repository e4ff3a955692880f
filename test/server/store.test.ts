/** The SQLite store's durability settings and group commit, seen from the outside of the HTTP layer. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { Ingest } from "../../server/services/ingest.js";
import { openSqliteStore } from "../../server/store/sqlite/index.js";
import type { IngestEvent } from "../../server/store/types.js";

describe("SQLite store", () => {
  const dirs: string[] = [];
  const open = () => {
    const dir = mkdtempSync(join(tmpdir(), "blockkit-store-"));
    dirs.push(dir);
    return { dir, store: openSqliteStore({ dataDir: dir }) };
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("runs in WAL mode with synchronous=FULL and foreign keys on", async () => {
    const { store } = open();
    expect(store.db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(store.db.pragma("synchronous", { simple: true })).toBe(2); // FULL
    expect(store.db.pragma("foreign_keys", { simple: true })).toBe(1);
    await store.close();
  });

  it("group commit: events submitted in one turn share one transaction, and each submitter settles after it", async () => {
    const { dir, store } = open();
    const user = await store.users.create("u", null, Date.now());
    const ingest = new Ingest(store, pino({ level: "silent" }));
    ingest.start();
    const event = (i: number): IngestEvent => ({
      kind: "data",
      userId: user.id,
      node: "STORETEST0001",
      guid: "STORETEST0001_0_0_9",
      G: "0",
      V: 0,
      D: 9,
      DA: String(i),
      num: i,
      ts: Date.now(),
    });
    const settled = await Promise.all(Array.from({ length: 50 }, (_, i) => ingest.submit([event(i)])));
    expect(settled.every((r) => r.length === 1 && r[0]?.duplicate === false)).toBe(true);
    expect(ingest.stats.batches).toBe(1);
    expect(ingest.stats.events).toBe(50);
    await ingest.stop();
    await expect(ingest.submit([event(99)])).rejects.toMatchObject({ statusCode: 503 });
    await store.close();
    // Committed means on disk: a fresh connection sees every reading.
    const again = openSqliteStore({ dataDir: dir });
    const device = await again.devices.byGuid("STORETEST0001_0_0_9");
    expect(await again.history.count(device?.id ?? -1, 0, Date.now())).toBe(50);
    await again.close();
  });
});
