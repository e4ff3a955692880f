/**
 * Rule evaluations and runs across several instances on PostgreSQL (rule_evals, rule jobs, leases
 * of 1 s here): a rule judged by the values committed before each event, a sleeping run on an
 * instance killed with SIGKILL resumed by another and run once, an event acknowledged by an instance
 * killed before it evaluated the rules fired on another once, and a resumed run and a newer firing
 * of the same rule run in firing order. Real server processes (leases-helpers.ts).
 */
import { describe, expect, it } from "vitest";
import { http } from "../helpers/http.js";
import { waitFor } from "../helpers/wait.js";
import { PG_AVAILABLE } from "../helpers/pg.js";
import { type Server, a, activate, b, count, db, post, sql, start, useInstances, user, withOthersStopped } from "./leases-helpers.js";

describe.skipIf(!PG_AVAILABLE)("leased work across instances on PostgreSQL", () => {
  useInstances();

  it("a rule judges each event by the values committed before it, whichever instance took the earlier ones", async () => {
    const node = "LEASES0000000004";
    const token = await activate(node);
    const button = `${node}_0_0_5`;
    const enable = `${node}_1_0_5`;
    const relay = `${node}_0_0_1002`;
    for (const [G, D] of [["0", 5], ["1", 5], ["0", 1002]] as const) {
      const res = await http(`${a.baseUrl}/block/${node}/data`, { method: "POST", headers: { "x-service-token": token }, json: { G, V: 0, D, DA: "0" } });
      expect(res.status).toBe(200);
    }
    const rule = async (shortName: string, preconditions: unknown[]): Promise<string> => {
      const res = await http<{ data: { rid: string } }>(`${a.baseUrl}${user("/rule")}`, {
        method: "POST",
        json: { shortName, preconditions, actions: [{ handler: "serviceSendCommand", params: { guid: relay, da: "1" } }] },
      });
      expect(res.status).toBe(200);
      return res.body.data.rid;
    };
    // Fires when the button's value enters [1, 1] from outside: it depends on the value before.
    const pressed = { handler: "serviceRangeToggle", params: { guid: button, between: 1, and: 1 } };
    const press = await rule("press", [pressed]);
    const both = await rule("press while enabled", [
      pressed,
      { handler: "serviceChange", params: { guid: enable, to: "on" } },
    ]);
    const post1 = (srv: Server, G: string, DA: string) =>
      http(`${srv.baseUrl}/block/${node}/data`, { method: "POST", headers: { "x-service-token": token }, json: { G, V: 0, D: 5, DA } });
    // The block's events alternate between the instances: B sees only the presses, A only the releases.
    for (let i = 0; i < 3; i++) {
      expect((await post1(a, "0", "0")).status).toBe(200);
      if (i === 2) expect((await post1(a, "1", "on")).status).toBe(200); // enabled through A only
      expect((await post1(b, "0", "1")).status).toBe(200);
    }
    const runs = async (rid: string): Promise<number> =>
      (await http<{ data: { history: unknown[] } }>(`${a.baseUrl}${user(`/rule/${rid}`)}`)).body.data.history.length;
    await waitFor("three runs of one rule, one of the other", async () => (await runs(press)) === 3 && (await runs(both)) === 1, 15_000);
    expect(await count("rule_jobs")).toBe(0);
  });

  it("a rule run sleeping on an instance killed with SIGKILL is resumed by another and runs once", async () => {
    const node = "LEASES0000000003";
    const token = await activate(node);
    const button = `${node}_0_0_5`;
    const relay = `${node}_0_0_1002`;
    await post(a, node, token, 5, "0");
    await post(a, node, token, 1002, "0");
    const created = await http<{ data: { rid: string } }>(`${a.baseUrl}${user("/rule")}`, {
      method: "POST",
      json: {
        shortName: "Press, wait, switch",
        preconditions: [{ handler: "serviceChange", params: { guid: button, to: "1" } }],
        actions: [
          { handler: "sleep", params: { guid: "N/A", sleepLength: 1500 } },
          { handler: "serviceSendCommand", params: { guid: relay, da: "1" } },
        ],
      },
    });
    expect(created.status).toBe(200);
    const rid = created.body.data.rid;
    // C reads every rule at start; the button pressed through C fires the rule there.
    const c = await start();
    const fired = Date.now();
    // The evaluation and the run are C's (A and B stopped), C dies in the sleep.
    await withOthersStopped(async () => {
      await post(c, node, token, 5, "1");
      await waitFor("C sleeping in the rule's run", async () => {
        const jobs = await sql.query(`SELECT sleep_until FROM ${db.schema}.rule_jobs`);
        return jobs.rows.length === 1 && jobs.rows[0].sleep_until !== null ? true : undefined;
      }, 10_000);
      c.child.kill("SIGKILL");
      await c.exited;
    });
    const polled = await http<{ DEVICE: { DA: string; GUID: string }[] }>(`${b.baseUrl}/block/${node}/commands`, { headers: { "x-service-token": token } });
    expect(polled.body.DEVICE).toEqual([expect.objectContaining({ GUID: relay, DA: "1" })]);
    // The sleep was resumed, not restarted from zero nor skipped.
    expect(Date.now() - fired).toBeGreaterThanOrEqual(1400);
    const rule = await waitFor("the run in the rule's history", async () => {
        const r = await http<{ data: { history: { ok: boolean; steps: unknown[] }[] } }>(`${a.baseUrl}${user(`/rule/${rid}`)}`);
        return r.body.data.history.length > 0 ? r.body.data : undefined;
      }, 10_000);
    expect(rule.history).toHaveLength(1);
    expect(rule.history[0]).toMatchObject({ ok: true });
    expect(rule.history[0]?.steps).toHaveLength(2);
    expect(await count("rule_jobs")).toBe(0);
    // Counted by the instance that took it over (/metrics).
    const resumed = async (srv: Server): Promise<number> =>
      Number(/^blockkit_rule_runs_resumed_total (\d+)/m.exec((await http(`${new URL(srv.baseUrl).origin}/metrics`)).text)?.[1] ?? Number.NaN);
    expect((await resumed(a)) + (await resumed(b))).toBe(1);
  }, 60_000);

  /** A rule: the button pressed (DA 1) switches the relay on, waits, and off. */
  const pressWaitSwitch = async (button: string, relay: string, sleepLength: number): Promise<string> => {
    const created = await http<{ data: { rid: string } }>(`${a.baseUrl}${user("/rule")}`, {
      method: "POST",
      json: {
        shortName: "Press: on, wait, off",
        preconditions: [{ handler: "serviceChange", params: { guid: button, to: "1" } }],
        actions: [
          { handler: "serviceSendCommand", params: { guid: relay, da: "1" } },
          { handler: "sleep", params: { guid: "N/A", sleepLength } },
          { handler: "serviceSendCommand", params: { guid: relay, da: "0" } },
        ],
      },
    });
    expect(created.status).toBe(200);
    return created.body.data.rid;
  };
  const history = async (rid: string) =>
    (await http<{ data: { history: { ok: boolean; timestamp: number; steps: unknown[] }[] } }>(`${a.baseUrl}${user(`/rule/${rid}`)}`)).body.data.history;

  it("an event acknowledged by an instance killed before it evaluated the rules fires its rule on another instance, once", async () => {
    const node = "LEASES0000000006";
    const token = await activate(node);
    const button = `${node}_0_0_5`;
    const relay = `${node}_0_0_1002`;
    await post(a, node, token, 5, "0");
    await post(a, node, token, 1002, "0");
    const rid = await pressWaitSwitch(button, relay, 0);
    // C commits and acknowledges events but evaluates no rule (the test hook): it is killed in the
    // window between the commit of the press and its evaluation.
    const takenOver = async (): Promise<number> => {
      let n = 0;
      for (const srv of [a, b]) {
        const text = (await http(`${new URL(srv.baseUrl).origin}/metrics`)).text;
        n += Number(/^blockkit_rule_evaluations_taken_over_total (\d+)/m.exec(text)?.[1] ?? Number.NaN);
      }
      return n;
    };
    const takenBefore = await takenOver();
    const c = await start(1, { BLOCKKIT_TEST_HOLD_RULE_EVALUATION: "1" });
    await post(c, node, token, 5, "1");
    // Written with the press (or already claimed by A or B, whose poll may see C's lease lapse first).
    await waitFor("the press waiting for its evaluation", async () => (await count("rule_evals")) === 1 || (await history(rid)).length > 0, 10_000);
    c.child.kill("SIGKILL");
    await c.exited;
    // The 1 s lease and a poll every 0.5 s: 1.5 s on an idle machine; the bound is for a loaded one.
    const runs = await waitFor("the rule's run, by another instance", async () => {
      const h = await history(rid);
      return h.length > 0 ? h : undefined;
    }, 15_000);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ ok: true });
    expect(await count("rule_evals")).toBe(0);
    await waitFor("no rule job left", async () => (await count("rule_jobs")) === 0, 10_000);
    // Once: no second run follows (every instance's poll has seen the empty table by now).
    expect(await history(rid)).toHaveLength(1);
    // Evaluated by an instance that claimed it (/metrics), not by C (the row's lease is 1 s: A or B
    // may claim it even before C is killed).
    expect((await takenOver()) - takenBefore).toBe(1);
  }, 60_000);

  it("a run resumed after its instance died and a newer firing of the same rule run one after the other, in firing order", async () => {
    const node = "LEASES0000000007";
    const token = await activate(node);
    const button = `${node}_0_0_5`;
    const relay = `${node}_0_0_1002`;
    await post(a, node, token, 5, "0");
    await post(a, node, token, 1002, "0");
    const rid = await pressWaitSwitch(button, relay, 1500);
    const jobs = async () => (await sql.query<{ id: string; step: number; sleep_until: string | null }>(`SELECT id, step, sleep_until FROM ${db.schema}.rule_jobs ORDER BY id`)).rows;
    const c = await start();
    // The first run is C's (A and B stopped), C dies in its sleep.
    await withOthersStopped(async () => {
      await post(c, node, token, 5, "1");
      await waitFor("C sleeping in the first run", async () => (await jobs()).some((j) => j.sleep_until !== null), 10_000);
      c.child.kill("SIGKILL");
      await c.exited;
    });
    // Pressed again through A while the first run's job is still C's (its lease not lapsed yet).
    await post(a, node, token, 5, "0");
    await post(a, node, token, 5, "1");
    await waitFor("the second firing's job", async () => (await jobs()).length === 2, 10_000);
    // Until the first run is over, the second one does not start: its job stays at its first action.
    let overlapped = false;
    await waitFor("the first run resumed and finished", async () => {
      const rows = await jobs();
      const second = rows.find((j) => j.id !== rows[0]?.id);
      if (rows.length === 2 && (second?.step !== 0 || second.sleep_until !== null)) overlapped = true;
      return rows.length < 2;
    }, 15_000);
    expect(overlapped).toBe(false);
    const runs = await waitFor("both runs in the history", async () => {
      const h = await history(rid);
      return h.length === 2 ? h : undefined;
    }, 15_000);
    expect(runs.every((r) => r.ok)).toBe(true);
    await waitFor("no rule job left", async () => (await count("rule_jobs")) === 0, 10_000);
  }, 60_000);
});
