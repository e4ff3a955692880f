/**
 * The shared store suite, automation: callbacks and sub-devices, the callback outbox, rules and
 * their runs, camera snapshots; every implementation gives the same answers
 * (test/helpers/store-suite.ts).
 */
import { describe, expect, it } from "vitest";
import { parseInterval } from "../../protocol/history.js";
import { NODE, SUITE_STORES, T0, ev, openEach, store, userId } from "../helpers/store-suite.js";

describe.each(SUITE_STORES)("store: $name", (impl) => {
  openEach(impl);

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
});
