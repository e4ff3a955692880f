/**
 * The shared store suite: every implementation of the Store interface (test/helpers/stores.ts)
 * gives the same answers on the same data — domain types (booleans, parsed objects), the ingest
 * transaction (device creation, meta patches, block activity, idempotency, order), history folds in
 * UTC calendar buckets, tokens, blocks, automation and accounts.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FoldFn, bucketStart, parseInterval } from "../../protocol/history.js";
import type { IngestEvent, Store, TokenRow } from "../../server/store/types.js";
import { dataEvent } from "../helpers/events.js";
import { PG_AVAILABLE } from "../helpers/pg.js";
import { STORES, postgresDayStore } from "../helpers/stores.js";

const NODE = "SUITENODE0001";
const T0 = Date.UTC(2024, 0, 31, 23, 59, 30);

// The PostgreSQL store once more with daily partitions: the same answers whatever the interval.
describe.each(PG_AVAILABLE ? [...STORES, postgresDayStore] : STORES)("store: $name", (impl) => {
  let store: Store;
  let dispose: () => Promise<void>;
  let userId: number;
  beforeEach(async () => {
    ({ store, dispose } = await impl.open());
    userId = (await store.users.create("alice", "hash", 1)).id;
  });
  afterEach(async () => {
    await dispose();
  });

  const ev = (G: string, DA: string, extra: Partial<IngestEvent> = {}): IngestEvent => dataEvent(NODE, userId, G, DA, { ts: T0, ...extra });

  it("users: create, look up by name and id, count, set the password", async () => {
    expect(await store.users.byName("alice")).toMatchObject({ id: userId, name: "alice", password_hash: "hash", created: 1 });
    expect(await store.users.byName("nobody")).toBeNull();
    await store.users.setPassword(userId, "h2");
    expect((await store.users.byId(userId))?.password_hash).toBe("h2");
    await expect(store.users.create("alice", null, 2)).rejects.toThrow();
    expect(await store.users.count()).toBe(1);
  });

  it("tokens: replace and revoke return the hashes they deleted", async () => {
    const row = (hash: string, extra: Partial<TokenRow> = {}): TokenRow => ({
      hash,
      kind: "user",
      user_id: userId,
      node_id: null,
      client_id: null,
      created: 5,
      ...extra,
    });
    await store.tokens.put(row("a"));
    expect(await store.tokens.find("a")).toEqual(row("a"));
    expect(await store.tokens.replace({ user_id: userId, kind: "user" }, row("b"))).toEqual(["a"]);
    expect(await store.tokens.find("a")).toBeNull();
    await store.tokens.put(row("c", { kind: "oauth", client_id: "app" }));
    await store.tokens.put(row("d", { kind: "oauth", client_id: "app" }));
    expect((await store.tokens.list({ user_id: userId, kind: "oauth" })).map((t) => t.hash).sort()).toEqual(["c", "d"]);
    expect((await store.tokens.revoke({ client_id: "app", kind: "oauth" })).sort()).toEqual(["c", "d"]);
    expect(await store.tokens.revoke({ hash: "zzz" })).toEqual([]);
  });

  it("blocks: claim, claim with a token (the old one returned), pending, remove with everything", async () => {
    const b = await store.blocks.claim(NODE, userId, 10, 99);
    expect(b).toMatchObject({ node_id: NODE, user_id: userId, short_name: NODE, date_created: 10, token_pending_until: 99 });
    expect(await store.blocks.takePending(NODE, 100)).toBeNull(); // expired
    expect(await store.blocks.takePending(NODE, 50)).toMatchObject({ node_id: NODE, user_id: userId, token_pending_until: null });
    expect(await store.blocks.takePending(NODE, 50)).toBeNull(); // taken once
    await store.blocks.setPending(NODE, 70);
    await store.blocks.setPending(NODE, null);
    expect((await store.blocks.get(NODE))?.token_pending_until).toBeNull();
    expect(await store.blocks.awaitingUntil(NODE)).toBeNull();
    await store.blocks.markAwaiting(NODE, 500);
    await store.blocks.markAwaiting(NODE, 400); // never shortened
    expect(await store.blocks.awaitingUntil(NODE)).toBe(500);
    const tok = (hash: string): TokenRow => ({ hash, kind: "block", user_id: userId, node_id: NODE, client_id: null, created: 1 });
    expect((await store.blocks.claimWithToken(NODE, userId, 20, tok("t1"))).revoked).toEqual([]);
    const second = await store.blocks.claimWithToken(NODE, userId, 30, tok("t2"));
    expect(second.revoked).toEqual(["t1"]);
    expect(second.block.node_id).toBe(NODE);
    await store.events.commit([ev("0", "1")]);
    const id = (await store.devices.byGuid(`${NODE}_0_0_9`))?.id ?? -1;
    await store.commands.add({ node_id: NODE, guid: `${NODE}_0_0_9`, g: "0", v: 0, d: 9, da: "x", created: 1, expires: 10 ** 15 });
    expect(await store.blocks.remove(NODE)).toEqual(["t2"]);
    expect(await store.blocks.get(NODE)).toBeNull();
    expect(await store.devices.byGuid(`${NODE}_0_0_9`)).toBeNull();
    expect(await store.history.count(id, 0, 10 ** 15)).toBe(0);
    expect(await store.commands.pending(NODE, 0)).toEqual([]);
  });

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

  it("callbacks and sub-devices with their actuations", async () => {
    const [r] = await store.events.commit([ev("0", "1")]);
    const id = r?.deviceId ?? -1;
    await store.callbacks.set({ device_id: id, url: "http://a/", secret: "s", created: 1 });
    await store.callbacks.set({ device_id: id, url: "http://b/", secret: "t", created: 2 });
    expect(await store.callbacks.get(id)).toEqual({ device_id: id, url: "http://b/", secret: "t", created: 1 });
    expect(await store.callbacks.remove(id)).toBe(true);
    expect(await store.callbacks.remove(id)).toBe(false);
    const sub = await store.subdevices.add({ device_id: id, sid: "s1", category: "rf", type: "sensor", short_name: "Door", data: "0110", url: null, token_hash: null, created: 1 });
    expect(sub).toMatchObject({ device_id: id, sid: "s1", data: "0110" });
    expect(await store.subdevices.match(id, "rf", "sensor", "0110")).toHaveLength(1);
    expect(await store.subdevices.match(id, "rf", "sensor", "s1")).toHaveLength(1);
    await store.subdevices.update({ ...sub, short_name: "Gate" });
    expect((await store.subdevices.get(id, "s1"))?.short_name).toBe("Gate");
    for (const ts of [Date.UTC(2024, 0, 31, 23), Date.UTC(2024, 1, 1, 1), Date.UTC(2024, 1, 2)]) await store.subdevices.addActuation(sub.id, ts);
    expect(await store.subdevices.actuationCount(sub.id, 0, 10 ** 15)).toBe(3);
    expect(await store.subdevices.actuations(sub.id, { from: 0, to: 10 ** 15, interval: parseInterval("1month") })).toEqual([
      { t: Date.UTC(2024, 0, 1), v: 1 },
      { t: Date.UTC(2024, 1, 1), v: 2 },
    ]);
    expect(await store.subdevices.actuations(sub.id, { from: 0, to: 10 ** 15, interval: parseInterval("1year") })).toEqual([{ t: Date.UTC(2024, 0, 1), v: 3 }]);
    expect(await store.subdevices.actuations(sub.id, { from: 0, to: 10 ** 15, interval: parseInterval("1day") })).toHaveLength(3);
    expect(await store.subdevices.byDevices([id])).toHaveLength(1);
    expect(await store.subdevices.remove(sub.id)).toBe(true);
  });

  it("callback outbox: a delivery per reading of a device with a callback, in its transaction; one head per device, leased, retried, trimmed", async () => {
    const [a, b] = await store.events.commit([ev("0", "0"), ev("1", "0")]);
    const devA = a?.deviceId as number;
    const devB = b?.deviceId as number;
    // No callback yet: nothing outboxed.
    expect((await store.events.commit([ev("0", "1", { ts: T0 + 1 })]))[0]?.outboxed).toBeUndefined();
    await store.callbacks.set({ device_id: devA, url: "http://a.test/cb", secret: "sa", created: 1 });
    await store.callbacks.set({ device_id: devB, url: "http://b.test/cb", secret: "sb", created: 1 });
    // Readings only (a config event is none), whatever their time; a new device has no callback.
    const results = await store.events.commit([
      ev("0", "2", { ts: T0 + 2 }),
      ev("0", "3", { ts: T0 + 3 }),
      ev("1", "7", { ts: T0 - 5 }),
      ev("0", "x", { kind: "config", meta: { path: ["config", "x"], value: 1 } }),
      ev("2", "9"),
    ]);
    expect([0, 1, 2, 4].map((i) => results[i]?.outboxed ?? false)).toEqual([true, true, true, false]);
    expect(await store.outbox.depth()).toBe(3);
    const now = Date.now();
    // Due now, oldest first: A's head "2" (limit 1), then B's head "7" (A's is held), with what the POST needs.
    const [headA] = await store.outbox.claim("L", now, 60_000, 1, 8, []);
    const [headB] = await store.outbox.claim("L", now, 60_000, 1, 8, []);
    if (!headA || !headB) throw new Error("no heads claimed");
    expect([headA, headB].map((d) => [d.guid, d.da, d.ts, d.url, d.secret, d.attempts, d.user_id])).toEqual([
      [`${NODE}_0_0_9`, "2", T0 + 2, "http://a.test/cb", "sa", 0, userId],
      [`${NODE}_1_0_9`, "7", T0 - 5, "http://b.test/cb", "sb", 0, userId],
    ]);
    expect(headA).toMatchObject({ device_id: devA, g: "0", v: 0, d: 9, node_id: NODE });
    expect(headA.delivery).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // Held: nothing more (A's "3" waits behind its head); renewed, still held.
    expect(await store.outbox.claim("L", now + 1, 60_000, 10, 8, [])).toEqual([]);
    await store.outbox.renew("L", [headA.id, headB.id], now + 2, 60_000);
    expect(await store.outbox.claim("L", now + 3, 60_000, 10, 8, [])).toEqual([]);
    // A's head failed: back with its next time and attempts; due only then, and the same delivery.
    await store.outbox.retry(headA.id, "L", 1, now + 5000);
    expect(await store.outbox.claim("L", now + 4999, 60_000, 10, 8, [])).toEqual([]);
    // A busy user is not claimed for.
    expect(await store.outbox.claim("L", now + 5000, 60_000, 10, 8, [userId])).toEqual([]);
    const again = await store.outbox.claim("L", now + 5000, 60_000, 1, 8, []);
    expect(again).toMatchObject([{ id: headA.id, delivery: headA.delivery, attempts: 1, da: "2" }]);
    // Delivered: gone, and A's next reading is the head now (B's is released: claimable again); at
    // most `perUser` of one user, the oldest.
    await store.outbox.remove([headA.id]);
    await store.outbox.renew("L", [headB.id], 0, 0);
    const next = await store.outbox.claim("L", now + 5001, 60_000, 10, 1, []);
    expect(next.map((d) => d.da)).toEqual(["3"]);
    expect(await store.outbox.depth()).toBe(2);
    await store.outbox.remove([next[0]?.id as number, headB.id]);
    expect(await store.outbox.depth()).toBe(0);

    // Bounds: the newest beyond each go (per device, then per user, then in all); a leased row
    // counts but stays. A deleted callback takes its deliveries with it.
    await store.events.commit(Array.from({ length: 6 }, (_, i) => ev("0", String(10 + i), { ts: T0 + 10 + i })));
    await store.events.commit(Array.from({ length: 2 }, (_, i) => ev("1", String(20 + i), { ts: T0 + 20 + i })));
    const [held] = await store.outbox.claim("L", now + 6000, 60_000, 1, 8, []);
    expect(held?.da).toBe("10");
    expect(await store.outbox.trim(4, 5, 4, now + 6000)).toEqual({ device: 2, user: 1, total: 1 });
    // Left: A's 10 (held) to 13; B's 21 beyond the user's 5, its 20 beyond the 4 in all.
    expect(await store.outbox.depth()).toBe(4);
    expect(await store.outbox.claim("L", now + 6001, 60_000, 10, 8, [])).toEqual([]);
    await store.events.commit([ev("1", "30", { ts: T0 + 30 })]);
    await store.devices.remove(devB);
    expect(await store.outbox.depth()).toBe(4);
    await store.callbacks.remove(devA);
    expect(await store.outbox.depth()).toBe(0);
  });

  it("rules: parsed handlers and real booleans; runs kept to the newest; ids never reused", async () => {
    const body = {
      user_id: userId,
      short_name: "r",
      preconditions: [{ handler: "ninjaEquality", params: { guid: "g", equals: "1" } }],
      actions: [{ handler: "sendEmail", params: { to: "a@b" } }],
      timeout: 2,
      suspended: false,
      created: 1,
    };
    const r = await store.rules.create(body);
    expect(r).toEqual({ ...body, id: r.id });
    await store.rules.setSuspended(r.id, true);
    expect((await store.rules.get(r.id))?.suspended).toBe(true);
    await store.rules.update({ ...r, short_name: "r2", timeout: 5 });
    expect(await store.rules.get(r.id)).toMatchObject({ short_name: "r2", timeout: 5, suspended: true });
    const steps = [{ handler: "sendEmail", ok: true, result: "sent", ms: 3 }];
    await store.rules.addRuns(
      [1, 2, 3].map((ts) => ({ rule_id: r.id, ts, ok: ts !== 2, steps, error: ts === 2 ? "boom" : null })),
      2,
    );
    expect(await store.rules.runs(r.id)).toEqual([
      { rule_id: r.id, ts: 3, ok: true, steps, error: null },
      { rule_id: r.id, ts: 2, ok: false, steps, error: "boom" },
    ]);
    expect(await store.rules.get(r.id)).toEqual({ ...body, id: r.id, short_name: "r2", timeout: 5, suspended: true });
    expect(await store.rules.count(userId)).toBe(1);
    expect(await store.rules.remove(r.id)).toBe(true);
    const next = await store.rules.create(body);
    expect(next.id).toBeGreaterThan(r.id);
    expect((await store.rules.all()).map((x) => x.id)).toEqual([next.id]);
  });

  it("snapshots keep the latest upload with a sequence number", async () => {
    const [r] = await store.events.commit([ev("0", "1")]);
    const id = r?.deviceId ?? -1;
    expect(await store.snapshots.put(id, "image/jpeg", Buffer.from("one"), 1)).toBe(1);
    expect(await store.snapshots.put(id, "image/png", Buffer.from("two"), 2)).toBe(2);
    const s = await store.snapshots.get(id);
    expect(s).toMatchObject({ device_id: id, seq: 2, content_type: "image/png", created: 2 });
    expect(Buffer.from(s?.body ?? []).toString()).toBe("two");
  });

  it("sessions, OAuth applications and codes (used is a boolean, consumed once), server keys", async () => {
    await store.sessions.put({ hash: "s", user_id: userId, created: 1, expires: 10 });
    expect(await store.sessions.find("s")).toEqual({ hash: "s", user_id: userId, created: 1, expires: 10 });
    expect(await store.sessions.prune(11)).toBe(1);
    const app = { client_id: "c", user_id: userId, name: "App", redirect_uri: "http://x/cb", secret_hash: "h", created: 1 };
    await store.oauthApps.put(app);
    expect(await store.oauthApps.list(userId)).toEqual([app]);
    await store.oauthCodes.put({ hash: "code", client_id: "c", user_id: userId, redirect_uri: "http://x/cb", expires: 100 });
    const first = await store.oauthCodes.consume("code");
    expect(first).toMatchObject({ replayed: false, row: { used: true, token_hash: null } });
    await store.oauthCodes.setToken("code", "tok");
    expect(await store.oauthCodes.consume("code")).toMatchObject({ replayed: true, row: { used: true, token_hash: "tok" } });
    expect(await store.oauthCodes.consume("nope")).toBeNull();
    expect(await store.oauthCodes.prune(101)).toBe(1);
    expect(await store.oauthApps.remove("c")).toBe(true);
    const k1 = await store.keys.getOrCreate("session", () => "v1", 1);
    expect(await store.keys.getOrCreate("session", () => "v2", 2)).toBe(k1);
  });
});
