/**
 * Rule evaluations and rule jobs on the embedded store (server/store/sqlite/rule-evals.ts), the
 * interfaces PostgreSQL implements for several instances (store-leases.test.ts): the ingest
 * transaction writes a row per watched, not stale reading with the value before it and its cause,
 * on the ingest thread as on the main thread; consumed with the jobs they fire in one transaction,
 * a device's rows in commit order; jobs fired once per timeout. Callback deliveries (outbox.ts):
 * written by the ingest transaction, on both paths, for a device with a callback. One process owns
 * the store: rows and jobs of another lease (a process that is gone) are taken over at once, not
 * after their lease.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStore } from "../../server/store/index.js";
import type { IngestEvent, RuleEvalsRepo, RuleJobsRepo, Store } from "../../server/store/types.js";
import { dataEvent } from "../helpers/stores.js";

const PATHS = [
  { name: "ingest thread (a data directory)", file: true },
  { name: "main thread (:memory:)", file: false },
];

describe.each(PATHS)("SQLite rule evaluations and jobs, $name", ({ file }) => {
  let store: Store;
  let dir: string | undefined;
  let user: number;
  const now = 1_800_000_000_000;
  const lease = { lease: "A", leaseMs: 1000 };

  beforeAll(async () => {
    dir = file ? mkdtempSync(join(tmpdir(), "blockkit-sqlite-leases-")) : undefined;
    store = await openStore(dir ? `sqlite:${dir}` : "sqlite::memory:");
    user = (await store.users.create("lease-user", null, now)).id;
  });
  afterAll(async () => {
    await store.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const event = (node: string, D: number, DA: string, ts: number, evaluate?: boolean, cause?: number[]): IngestEvent =>
    dataEvent(user, node, D, DA, ts, evaluate, cause);
  const evals = () => store.ruleEvals as RuleEvalsRepo;
  const jobs = () => store.ruleJobs as RuleJobsRepo;
  const rule = async (timeout = 0) =>
    (await store.rules.create({ user_id: user, short_name: "r", preconditions: [], actions: [], timeout, suspended: false, created: now })).id;

  it("writes a row per watched reading, not stale, with the value before it and its cause, in the event's transaction", async () => {
    await store.events.commit(
      [event("SQLEVAL1", 5, "0", now, true), event("SQLEVAL1", 5, "1", now + 2, true, [3, 4]), event("SQLEVAL1", 9, "7", now), event("SQLEVAL1", 5, "9", now + 1, true)],
      lease,
    );
    // A stale reading (older than the device's last) is not evaluated: the store's last value is unchanged too.
    expect((await store.devices.byGuid("SQLEVAL1_0_0_5"))?.last_da).toBe("1");
    const claimed = await evals().claim("A", now, 1000, 10);
    expect(claimed.map((r) => [r.guid, r.da, r.prev, r.cause, r.user_id])).toEqual([
      ["SQLEVAL1_0_0_5", "0", null, [], user],
      ["SQLEVAL1_0_0_5", "1", "0", [3, 4], user],
    ]);
    // Leased here now: a second claim of the same lease does not hand them out again.
    expect(await evals().claim("A", now + 10, 1000, 10)).toEqual([]);
    const rid = await rule();
    const out = await evals().consume("A", claimed.map((r) => r.id), [{ ruleId: rid, firedAt: now, timeoutMs: 0, cause: [3, 4] }], 1000);
    expect(out).toEqual([expect.any(Number)]);
    expect(await evals().depth()).toBe(0);
    const [job] = await jobs().takeOver("B", now, 1000, 10);
    expect(job).toMatchObject({ id: out?.[0], rule_id: rid, fired_at: now, cause: [3, 4], step: 0, steps: [], sleep_until: null });
    await jobs().finish(job?.id as number);
  });

  it("consumes a device's rows in commit order: a later row alone is refused and released", async () => {
    await store.events.commit([event("SQLEVAL2", 5, "1", now, true), event("SQLEVAL2", 5, "2", now + 1, true)], lease);
    const [first, second] = await evals().claim("A", now, 60_000, 10);
    const rid = await rule();
    const f = { ruleId: rid, firedAt: now, timeoutMs: 0, cause: [] };
    expect(await evals().consume("A", [second?.id as number], [f], 60_000)).toBeNull();
    // Released: claimed again (the first row is still A's, in its pipeline).
    expect((await evals().claim("A", now, 60_000, 10)).map((r) => r.id)).toEqual([second?.id]);
    const out = await evals().consume("A", [first?.id as number, second?.id as number], [f], 60_000);
    expect(out).toEqual([expect.any(Number)]);
    await jobs().finish(out?.[0] as number);
    expect(await evals().depth()).toBe(0);
  });

  it("fires once per timeout; what another lease holds is a gone process's, taken over at once, oldest job of a rule first", async () => {
    const rid = await rule(60);
    const fire = async (l: string, at: number, D = 5) => {
      await store.events.commit([event("SQLEVAL3", D, String(at), at, true)], lease);
      const rows = await evals().claim(l, at, 60_000, 10);
      return evals().consume(l, rows.map((r) => r.id), [{ ruleId: rid, firedAt: at, timeoutMs: 60_000, cause: [] }], 60_000);
    };
    const [j1] = (await fire("dead", now)) ?? [];
    expect(typeof j1).toBe("number");
    expect(await fire("A", now + 1000)).toEqual(["refused"]);
    // Past the timeout, while the gone process's job is not finished: behind it.
    expect(await fire("A", now + 61_000)).toEqual(["behind"]);
    // Its lease runs for a minute more, yet the job is taken over now; the one behind waits for it.
    const taken = await jobs().takeOver("A", now + 61_001, 60_000, 10);
    expect(taken.map((j) => j.id)).toEqual([j1]);
    expect(await jobs().progress(j1 as number, "dead", 1, [], null)).toBe(false);
    expect(await jobs().progress(j1 as number, "A", 1, [{ handler: "sleep" }], now + 70_000)).toBe(true);
    expect(await jobs().takeOver("A", now + 61_002, 60_000, 10)).toEqual([]);
    await jobs().finish(j1 as number);
    expect(await jobs().takeOver("A", now + 61_003, 60_000, 10)).toMatchObject([{ rule_id: rid, fired_at: now + 61_000 }]);
    // The rows of a gone process too: claimed at once; released ones are claimed again.
    await store.events.commit([event("SQLEVAL3", 5, "x", now + 62_000, true)], lease);
    const [row] = await evals().claim("dead", now + 62_000, 60_000, 10);
    expect((await evals().claim("A", now + 62_001, 60_000, 10)).map((r) => r.id)).toEqual([row?.id]);
    await evals().release("A", [row?.id as number]);
    expect((await evals().claim("A", now + 62_002, 60_000, 10)).map((r) => r.id)).toEqual([row?.id]);
    expect(await evals().consume("A", [row?.id as number], [], 60_000)).toEqual([]);
  });

  it("writes a reading's callback delivery in its transaction for a device with a callback; another lease's delivery is taken over at once", async () => {
    const [first] = await store.events.commit([event("SQLOUTBOX1", 9, "0", now), event("SQLOUTBOX1", 8, "0", now)]);
    await store.callbacks.set({ device_id: first?.deviceId as number, url: "http://127.0.0.1:9/x", secret: "s", created: now });
    const results = await store.events.commit([event("SQLOUTBOX1", 9, "1", now + 1), event("SQLOUTBOX1", 8, "1", now + 1), event("SQLOUTBOX1", 9, "2", now + 2)]);
    expect(results.map((r) => r.outboxed ?? false)).toEqual([true, false, true]);
    expect(await store.outbox.depth()).toBe(2);
    // The head with the deliveries after it (a prefix of the device's queue, sent in order here).
    const gone = await store.outbox.claim("dead", Date.now(), 60_000, 10, 8, []);
    expect(gone).toMatchObject([
      { da: "1", guid: "SQLOUTBOX1_0_0_9", url: "http://127.0.0.1:9/x" },
      { da: "2", guid: "SQLOUTBOX1_0_0_9", url: "http://127.0.0.1:9/x" },
    ]);
    // A process that is gone leased them for a minute: the next one takes them now, same deliveries.
    const taken = await store.outbox.claim("A", Date.now(), 60_000, 10, 8, []);
    expect(taken.map((d) => [d.id, d.delivery])).toEqual(gone.map((d) => [d.id, d.delivery]));
    // Leased to A: not handed out again to A.
    expect(await store.outbox.claim("A", Date.now(), 60_000, 10, 8, [])).toEqual([]);
    // The head failed: back for later, the rest released; claimed again only with the head, when due.
    await store.outbox.renew("A", [taken[1]?.id as number], 0, 0);
    await store.outbox.retry(taken[0]?.id as number, "A", 1, Date.now() + 60_000);
    expect(await store.outbox.claim("A", Date.now(), 60_000, 10, 8, [])).toEqual([]);
    expect((await store.outbox.claim("A", Date.now() + 60_000, 60_000, 10, 8, [])).map((d) => [d.da, d.attempts])).toEqual([
      ["1", 1],
      ["2", 0],
    ]);
    await store.callbacks.remove(first?.deviceId as number);
    expect(await store.outbox.depth()).toBe(0);
  });
});
