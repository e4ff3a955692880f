/**
 * The leased tables of the PostgreSQL store (server/store/postgres/leases.ts): callback deliveries
 * written by the ingest transaction, leased one head per device, never by two leases at once, put
 * back for any instance, trimmed to their bounds; each reading's previous value as committed (what
 * rules judge by); rule jobs fired once per timeout, taken over once their lease lapsed. Rule
 * evaluations (server/store/postgres/rule-evals.ts): rows written by the ingest transaction for
 * watched readings, leased to the committing instance; consumed with the jobs they fire in one
 * transaction, once, a device's rows in commit order; claimed by another instance when their lease
 * lapsed; a rule's jobs taken over one at a time in firing order.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IngestEvent, RuleEvalsRepo, Store } from "../../server/store/types.js";
import { PG_AVAILABLE } from "../helpers/pg.js";
import { dataEvent, postgresStore } from "../helpers/stores.js";

describe.skipIf(!PG_AVAILABLE)("PostgreSQL leases", () => {
  let store: Store;
  let dispose: () => Promise<void>;
  let user: number;
  const now = 1_800_000_000_000;

  beforeAll(async () => {
    ({ store, dispose } = await postgresStore.open());
    user = (await store.users.create("lease-user", null, now)).id;
  });
  afterAll(async () => dispose());

  const event = (node: string, D: number, DA: string, ts: number, evaluate?: boolean): IngestEvent => dataEvent(user, node, D, DA, ts, evaluate);
  const outbox = () => store.outbox;
  const jobs = () => store.ruleJobs as NonNullable<Store["ruleJobs"]>;

  it("writes deliveries with their events, only for devices with a callback, and leases one head per device", async () => {
    const [first] = await store.events.commit([event("LEASEDB1", 9, "0", now), event("LEASEDB1", 8, "0", now)]);
    expect(first?.outboxed).toBeUndefined();
    await store.callbacks.set({ device_id: first?.deviceId as number, url: "http://127.0.0.1:9/x", secret: "s", created: now });
    const results = await store.events.commit([event("LEASEDB1", 9, "1", now + 1), event("LEASEDB1", 9, "2", now + 2), event("LEASEDB1", 8, "5", now + 3)]);
    expect(results.map((r) => r.outboxed ?? false)).toEqual([true, true, false]);
    expect(await outbox().depth()).toBe(2);

    // Two instances claim at once: the head goes to one of them, the second delivery to nobody yet.
    const [x, y] = await Promise.all([outbox().claim("A", now, 1000, 10, 8, []), outbox().claim("B", now, 1000, 10, 8, [])]);
    const won = [...(x ?? []), ...(y ?? [])];
    expect(won).toHaveLength(1);
    expect(won[0]).toMatchObject({ da: "1", guid: "LEASEDB1_0_0_9", url: "http://127.0.0.1:9/x", secret: "s", attempts: 0 });
    // Held, and renewed: nothing to claim; a busy user is not claimed for.
    await outbox().renew(x?.length ? "A" : "B", [won[0]?.id as number], now + 900, 1000);
    expect(await outbox().claim("C", now + 1500, 1000, 10, 8, [])).toEqual([]);
    // The lease lapses: another instance takes the same delivery (same X-Blockkit-Delivery).
    const taken = await outbox().claim("C", now + 2000, 1000, 10, 8, []);
    expect(taken.map((d) => d.delivery)).toEqual([won[0]?.delivery]);
    // A failure goes back with its next time; then the head is due again for anyone.
    await outbox().retry(taken[0]?.id as number, "C", 1, now + 5000);
    expect(await outbox().claim("D", now + 4000, 1000, 10, 8, [])).toEqual([]);
    expect(await outbox().claim("D", now + 5000, 1000, 10, 8, [user])).toEqual([]);
    const again = await outbox().claim("D", now + 5000, 1000, 10, 8, []);
    expect(again).toMatchObject([{ id: taken[0]?.id, attempts: 1 }]);
    await outbox().remove([again[0]?.id as number]);
    // The next delivery of the device is the head now.
    expect(await outbox().claim("D", now + 5000, 1000, 10, 8, [])).toMatchObject([{ da: "2" }]);
  });

  it("trims the newest deliveries beyond the bounds, by reason, and a deleted callback takes its deliveries", async () => {
    const [r] = await store.events.commit([event("LEASEDB2", 9, "0", now)]);
    const deviceId = r?.deviceId as number;
    await store.callbacks.set({ device_id: deviceId, url: "http://127.0.0.1:9/y", secret: "s", created: now });
    await store.events.commit(Array.from({ length: 6 }, (_, i) => event("LEASEDB2", 9, String(i), now + i + 1)));
    const before = await outbox().depth();
    expect(await outbox().trim(4, 1000, 10_000, now + 10_000)).toEqual({ device: 2, user: 0, total: 0 });
    expect(await outbox().depth()).toBe(before - 2);
    await store.callbacks.remove(deviceId);
    expect(await outbox().depth()).toBe(before - 6);
  });

  it("hands each reading the value committed before it, or marks it stale", async () => {
    const first = await store.events.commit([event("LEASEDB3", 9, "1", now), event("LEASEDB3", 9, "2", now + 2), event("LEASEDB3", 9, "0", now + 1)]);
    expect(first.map((r) => [r.prev, r.stale])).toEqual([
      [null, undefined],
      ["1", undefined],
      [undefined, true],
    ]);
    const [next] = await store.events.commit([event("LEASEDB3", 9, "3", now + 3)]);
    expect(next?.prev).toBe("2");
  });

  it("fires a rule job once per timeout, records progress only under its lease, and hands over lapsed jobs", async () => {
    const rule = await store.rules.create({ user_id: user, short_name: "r", preconditions: [], actions: [], timeout: 60, suspended: false, created: now });
    const id = await jobs().fire(rule.id, now, 60_000, [7], "A", 1000);
    expect(id).not.toBeNull();
    expect(await jobs().fire(rule.id, now + 1000, 60_000, [], "B", 1000)).toBeNull();
    expect(await jobs().progress(id as number, "A", 1, [{ handler: "sleep", ok: true }], now + 3000)).toBe(true);
    expect(await jobs().takeOver("B", now + 500, 1000, 10)).toEqual([]);
    const [taken] = await jobs().takeOver("B", now + 1001, 1000, 10);
    expect(taken).toMatchObject({ id, rule_id: rule.id, fired_at: now, cause: [7], step: 1, steps: [{ handler: "sleep" }], sleep_until: now + 3000 });
    // A lost it: its progress is refused, so it stops.
    expect(await jobs().progress(id as number, "A", 2, [], null)).toBe(false);
    await jobs().finish(id as number);
    expect(await jobs().takeOver("C", now + 100_000, 1000, 10)).toEqual([]);
  });

  const watched = (node: string, D: number, DA: string, ts: number): IngestEvent => event(node, D, DA, ts, true);
  const evals = () => store.ruleEvals as RuleEvalsRepo;
  const rule = async (timeout = 0) =>
    (await store.rules.create({ user_id: user, short_name: "r", preconditions: [], actions: [], timeout, suspended: false, created: now })).id;

  it("writes a row per watched reading with the value before it, leased to the committing instance, in the same transaction", async () => {
    const before = await evals().depth();
    const results = await store.events.commit(
      [watched("EVALDB01", 5, "0", now), watched("EVALDB01", 5, "1", now + 1), event("EVALDB01", 9, "7", now), watched("EVALDB01", 5, "9", now - 1)],
      { lease: "A", leaseMs: 1000 },
    );
    // Watched and not stale only; ids in commit order.
    expect(results.map((r) => r.evaluation !== undefined)).toEqual([true, true, false, false]);
    expect(results[1]?.evaluation).toBeGreaterThan(results[0]?.evaluation as number);
    expect(await evals().depth()).toBe(before + 2);
    // Without a lease nothing is written (the embedded store's way, and an instance with no rules).
    const [plain] = await store.events.commit([watched("EVALDB01", 5, "2", now + 2)]);
    expect(plain?.evaluation).toBeUndefined();
    // Leased to A: nobody else claims them before the lease lapses; then another instance does, in order.
    expect(await evals().claim("B", Date.now(), 1000, 10)).toEqual([]);
    const claimed = await evals().claim("B", Date.now() + 5000, 1000, 10);
    expect(claimed.map((r) => [r.guid, r.da, r.prev, r.cause])).toEqual([
      ["EVALDB01_0_0_5", "0", null, []],
      ["EVALDB01_0_0_5", "1", "0", []],
    ]);
    // A lost them: its consume does nothing; B's deletes them.
    const ids = claimed.map((r) => r.id);
    const r1 = await rule();
    expect(await evals().consume("A", ids, [{ ruleId: r1, firedAt: now, timeoutMs: 0, cause: [] }], 1000)).toBeNull();
    expect(await evals().consume("B", ids, [], 1000)).toEqual([]);
    expect(await evals().depth()).toBe(before);
  });

  it("consumes a device's rows in commit order: a later row waits for the earlier one", async () => {
    const [first, second] = await store.events.commit([watched("EVALDB02", 5, "1", now), watched("EVALDB02", 5, "2", now + 1)], { lease: "A", leaseMs: 60_000 });
    const r1 = await rule();
    // The second row alone, with the first still waiting: refused and released for a claim in order.
    expect(await evals().consume("A", [second?.evaluation as number], [{ ruleId: r1, firedAt: now, timeoutMs: 0, cause: [7] }], 60_000)).toBeNull();
    const late = Date.now() + 120_000;
    // Of the device only the rows up to the first one still leased (the first is A's): none yet.
    expect((await evals().claim("B", Date.now(), 60_000, 10)).filter((r) => r.guid === "EVALDB02_0_0_5")).toEqual([]);
    // Both in order, as one consume: fires the job.
    const out = await evals().consume("A", [first?.evaluation as number, second?.evaluation as number], [{ ruleId: r1, firedAt: now, timeoutMs: 0, cause: [7] }], 60_000);
    expect(out).toEqual([expect.any(Number)]);
    expect((await evals().claim("B", late, 1000, 10)).filter((r) => r.guid === "EVALDB02_0_0_5")).toEqual([]);
    await jobs().finish(out?.[0] as number);
  });

  it("fires jobs once per timeout; a job behind another lease's job of its rule waits, and jobs are taken over oldest first", async () => {
    const rid = await rule(60);
    const fire = async (lease: string, at: number) => {
      const [r] = await store.events.commit([watched("EVALDB03", 5, String(at), at)], { lease, leaseMs: 60_000 });
      return evals().consume(lease, [r?.evaluation as number], [{ ruleId: rid, firedAt: at, timeoutMs: 60_000, cause: [] }], 60_000);
    };
    const [j1] = (await fire("A", now)) ?? [];
    expect(typeof j1).toBe("number");
    expect(await fire("B", now + 1000)).toEqual(["refused"]);
    // Past the timeout, on B, while A's job still runs: behind it.
    expect(await fire("B", now + 61_000)).toEqual(["behind"]);
    // A's job lapses (A died): only it is taken over; the one behind waits for it.
    const taken = await jobs().takeOver("C", now + 200_000, 60_000, 10);
    expect(taken.map((j) => j.id)).toEqual([j1]);
    expect(await jobs().takeOver("D", now + 200_000, 60_000, 10)).toEqual([]);
    await jobs().finish(j1 as number);
    const next = await jobs().takeOver("D", now + 200_000, 60_000, 10);
    expect(next).toMatchObject([{ rule_id: rid, fired_at: now + 61_000 }]);
    await jobs().finish(next[0]?.id as number);
  });

  it("a second firing by the same lease is not behind its own job (it runs after it, in this instance's queue)", async () => {
    const rid = await rule(0);
    const [a] = await store.events.commit([watched("EVALDB04", 5, "1", now)], { lease: "A", leaseMs: 60_000 });
    const [b] = await store.events.commit([watched("EVALDB04", 5, "2", now + 1)], { lease: "A", leaseMs: 60_000 });
    const f = { ruleId: rid, firedAt: Date.now(), timeoutMs: 0, cause: [] };
    const out1 = await evals().consume("A", [a?.evaluation as number], [f], 60_000);
    const out2 = await evals().consume("A", [b?.evaluation as number], [f], 60_000);
    expect([typeof out1?.[0], typeof out2?.[0]]).toEqual(["number", "number"]);
    for (const id of [...(out1 ?? []), ...(out2 ?? [])]) await jobs().finish(id as number);
  });
});
