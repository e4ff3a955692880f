/**
 * `blockkit export` / `blockkit import` (server/store/dump.ts): an embedded SQLite store with every
 * kind of row goes into an empty PostgreSQL schema and reads back the same through the Store
 * interface; ids go on after the imported ones; a non-empty target is refused.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { exportSqlite, importIntoPostgres } from "../../server/store/dump.js";
import { openStore } from "../../server/store/index.js";
import { openSqliteStore } from "../../server/store/sqlite/index.js";
import type { Store } from "../../server/store/types.js";
import { dataEvent } from "../helpers/events.js";
import { PG_AVAILABLE, pgSchemaUrl } from "../helpers/pg.js";

const NODE = "DUMPNODE000001";
const T = Date.UTC(2024, 2, 10, 12);

async function* linesOf(lines: string[]): AsyncIterable<string> {
  for (const l of lines) yield l;
}

/** Everything the store holds that a user would miss, read through the interface. */
async function snapshot(store: Store, userId: number) {
  const devices = await store.devices.list(userId);
  const id = devices[0]?.id ?? -1;
  const sub = await store.subdevices.get(id, "s1");
  const rules = await store.rules.list(userId);
  return {
    user: await store.users.byName("alice"),
    token: await store.tokens.find("tokenhash"),
    blocks: await store.blocks.list(userId),
    devices,
    history: await store.history.query(id, { from: 0, to: T + 10_000, interval: null, fn: "mean" }),
    commands: await store.commands.pending(NODE, 0),
    callback: await store.callbacks.get(id),
    sub,
    actuations: await store.subdevices.actuationCount(sub?.id ?? -1, 0, T + 10_000),
    rules,
    runs: await store.rules.runs(rules[0]?.id ?? -1),
    snapshot: await store.snapshots.get(id),
    session: await store.sessions.find("sess"),
    apps: await store.oauthApps.list(userId),
    key: await store.keys.getOrCreate("k", () => "other", 1),
    awaiting: await store.blocks.awaitingUntil("WAITING000001"),
  };
}

describe.skipIf(!PG_AVAILABLE)("export from SQLite, import into PostgreSQL", () => {
  const dir = mkdtempSync(join(tmpdir(), "blockkit-dump-"));
  const db = pgSchemaUrl();
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await db.drop();
  });

  it("round-trips users, tokens, blocks, devices, readings, rules, sub-devices, callbacks, snapshots and OAuth apps", async () => {
    const src = await openStore(`sqlite:${dir}`);
    const user = await src.users.create("alice", "pwhash", 1);
    await src.tokens.put({ hash: "tokenhash", kind: "block", user_id: user.id, node_id: NODE, client_id: null, created: 2 });
    await src.blocks.claim(NODE, user.id, 3, null);
    const [r] = await src.events.commit([
      dataEvent(NODE, user.id, "0", "21.5", { ts: T, key: "k1" }),
      dataEvent(NODE, user.id, "0", "open", { ts: T + 1, num: null }),
      dataEvent(NODE, user.id, "0", "x", { kind: "config", num: null, meta: { path: ["config", "IP"], value: { payload: { ip: "1.2.3.4" }, timestamp: 5 } } }),
    ]);
    const id = r?.deviceId ?? -1;
    await src.commands.add({ node_id: NODE, guid: `${NODE}_0_0_9`, g: "0", v: 0, d: 9, da: "1", created: 1, expires: 10 ** 15 });
    await src.callbacks.set({ device_id: id, url: "http://a/", secret: "s", created: 1 });
    const sub = await src.subdevices.add({ device_id: id, sid: "s1", category: "rf", type: "sensor", short_name: "Door", data: "0101", url: null, token_hash: null, created: 1 });
    await src.subdevices.addActuation(sub.id, T);
    const rule = await src.rules.create({
      user_id: user.id,
      short_name: "r",
      preconditions: [{ handler: "ninjaEquality", params: { guid: "g", equals: "1" } }],
      actions: [{ handler: "sendEmail", params: { to: "a@b" } }],
      timeout: 1,
      suspended: true,
      created: 1,
    });
    await src.rules.addRuns([{ rule_id: rule.id, ts: 9, ok: false, steps: [{ handler: "sendEmail", ok: false, error: "x", ms: 1 }], error: "x" }], 5);
    await src.snapshots.put(id, "image/jpeg", Buffer.from([0, 1, 2, 255]), 4);
    await src.sessions.put({ hash: "sess", user_id: user.id, created: 1, expires: 10 ** 15 });
    await src.oauthApps.put({ client_id: "app", user_id: user.id, name: "App", redirect_uri: "http://x/cb", secret_hash: "sh", created: 1 });
    await src.keys.getOrCreate("k", () => "secret-key", 1);
    await src.blocks.markAwaiting("WAITING000001", 77);
    const before = await snapshot(src, user.id);
    await src.close();

    const lines: string[] = [];
    const raw = openSqliteStore({ dataDir: dir, ingestThread: false });
    const exported = exportSqlite(raw.db, (l) => lines.push(l));
    await raw.close();
    expect(exported).toMatchObject({ users: 1, devices: 1, readings: 2, rules: 1, camera_snapshots: 1 });

    const imported = await importIntoPostgres(db.url, linesOf(lines));
    expect(imported).toMatchObject({ users: 1, tokens: 1, devices: 1, readings: 2, subdevices: 1, rule_runs: 1, oauth_apps: 1 });
    const dst = await openStore(db.url);
    try {
      expect(await snapshot(dst, user.id)).toEqual(before);
      // Ids continue after the imported ones; idempotency keys came along.
      expect((await dst.users.create("bob", null, 1)).id).toBeGreaterThan(user.id);
      expect((await dst.events.commit([dataEvent(NODE, user.id, "0", "1", { ts: T, key: "k1" })]))[0]?.duplicate).toBe(true);
    } finally {
      await dst.close();
    }
    await expect(importIntoPostgres(db.url, linesOf(lines))).rejects.toThrow(/not empty/);
  });
});
