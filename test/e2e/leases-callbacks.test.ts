/**
 * Callback deliveries across several instances on PostgreSQL (the durable outbox, leases of 1 s
 * here): once per event in order whichever instance committed it, the delivery in flight on an
 * instance killed with SIGKILL made by another, and an instance stopped cleanly handing its
 * delivery and its sleeping rule run over at once. Real server processes (leases-helpers.ts).
 */
import { describe, expect, it } from "vitest";
import { http } from "../helpers/http.js";
import { waitFor } from "../helpers/wait.js";
import { PG_AVAILABLE } from "../helpers/pg.js";
import { stopProcess } from "../helpers/process.js";
import { a, activate, b, count, db, deliveries, post, receiver, setCallback, sql, start, useInstances, user, withOthersStopped } from "./leases-helpers.js";

describe.skipIf(!PG_AVAILABLE)("leased work across instances on PostgreSQL", () => {
  useInstances();

  it("a callback is delivered once per event, in order, whichever instance committed it", async () => {
    const node = "LEASES0000000001";
    const token = await activate(node);
    await post(a, node, token, 9, "0");
    await setCallback(`${node}_0_0_9`, "/once");
    for (let i = 1; i <= 6; i++) await post(i % 2 ? a : b, node, token, 9, String(i));
    await waitFor("six deliveries", async () => deliveries("/once").length >= 6, 15_000);
    // Nothing is left to deliver: no second delivery of any event can follow.
    await waitFor("an empty outbox", async () => (await count("callback_outbox")) === 0, 10_000);
    const got = deliveries("/once");
    expect(got.map((r) => (JSON.parse(r.body.toString()) as { DA: number }).DA)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(new Set(got.map((r) => r.headers["x-blockkit-delivery"])).size).toBe(6);
  });

  it("the delivery in flight on an instance killed with SIGKILL is made by another once its lease lapses", async () => {
    const c = await start();
    const node = "LEASES0000000002";
    const token = await activate(node);
    await post(a, node, token, 9, "0");
    await setCallback(`${node}_0_0_9`, "/takeover");
    receiver.hold = true;
    // C leased the delivery and its attempt is held by the receiver: C dies with it.
    await withOthersStopped(async () => {
      await post(c, node, token, 9, "42");
      await waitFor("C's attempt", async () => deliveries("/takeover").length === 1, 10_000);
      c.child.kill("SIGKILL");
      await c.exited;
    });
    receiver.release();
    // The 1 s lease and a poll every 0.5 s: 1.5 s on an idle machine; the bound is for a loaded one.
    await waitFor("the attempt of another instance", async () => deliveries("/takeover").length === 2, 15_000);
    const [first, second] = deliveries("/takeover");
    expect(second?.headers["x-blockkit-delivery"]).toBe(first?.headers["x-blockkit-delivery"]);
    expect(JSON.parse(String(second?.body))).toMatchObject({ GUID: `${node}_0_0_9`, DA: 42 });
    await waitFor("an empty outbox", async () => (await count("callback_outbox")) === 0, 10_000);
  }, 60_000);

  it("an instance stopped cleanly hands its delivery in flight and its sleeping run over at once, not after its lease", async () => {
    // C's leases last 30 s: only their release at its stop lets the others take over within seconds.
    const node = "LEASES0000000005";
    const token = await activate(node);
    const button = `${node}_0_0_5`;
    const relay = `${node}_0_0_1002`;
    for (const D of [5, 9, 1002]) await post(a, node, token, D, "0");
    await setCallback(`${node}_0_0_9`, "/released");
    const created = await http(`${a.baseUrl}${user("/rule")}`, {
      method: "POST",
      json: {
        shortName: "Press, wait, switch",
        preconditions: [{ handler: "serviceChange", params: { guid: button, to: "1" } }],
        actions: [
          { handler: "sleep", params: { guid: "N/A", sleepLength: 2000 } },
          { handler: "serviceSendCommand", params: { guid: relay, da: "1" } },
        ],
      },
    });
    expect(created.status).toBe(200);
    const c = await start(30);
    receiver.hold = true;
    // The delivery and the run are C's (A and B stopped meanwhile).
    await withOthersStopped(async () => {
      await post(c, node, token, 9, "7");
      await post(c, node, token, 5, "1");
      await waitFor("C's attempt", async () => deliveries("/released").length === 1, 10_000);
      await waitFor("C's run sleeping", async () => (await sql.query(`SELECT 1 FROM ${db.schema}.rule_jobs WHERE sleep_until IS NOT NULL`)).rows.length === 1, 10_000);
    });
    const stopped = Date.now();
    expect(await stopProcess(c)).toBe(0);
    receiver.release();
    await waitFor("the delivery made by another instance", async () => deliveries("/released").length === 2, 15_000);
    const polled = await http<{ DEVICE: { DA: string; GUID: string }[] }>(`${b.baseUrl}/block/${node}/commands`, { headers: { "x-service-token": token } });
    expect(polled.body.DEVICE).toEqual([expect.objectContaining({ GUID: relay, DA: "1" })]);
    // Well under C's 30 s leases: released at its stop, taken at the next poll (at most 1 s).
    expect(Date.now() - stopped).toBeLessThan(20_000);
    const [first, second] = deliveries("/released");
    expect(second?.headers["x-blockkit-delivery"]).toBe(first?.headers["x-blockkit-delivery"]);
  }, 60_000);
});
