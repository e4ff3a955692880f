/**
 * Rules cannot take the server: the runs of many rules fired by one event are spread over turns of
 * the event loop (another user's request is answered meanwhile), and a rule whose own action chain
 * re-triggers it (rule -> webhook -> its own tickle URL) is stopped and the loop recorded.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { FiringRate } from "../../../server/services/automation/rules/firing-rate.js";
import { type TestServer, startTestServer } from "../../helpers/server.js";

interface Env<T = unknown> {
  result: number;
  error: string | null;
  data: T;
}

describe("rules under load and in loops", () => {
  let t: TestServer;
  afterEach(async () => {
    await t.close();
  });

  it("stops a rule -> webhook -> own tickle loop and records it in the rule's history", async () => {
    // The server calls its own tickle URL: its own listener, refused unless allowed this precisely.
    t = await startTestServer({ outbound: { allow: ["127.0.0.1/32"] } }, { listen: true });
    const q = `user_access_token=${t.token}`;
    const hooks = ((await t.server.api.inject({ method: "GET", url: `/auth/webhook?${q}` })).json() as Env<{ guid: string }>).data.guid;
    const sensor = (await t.api({ method: "POST", url: `/device/${hooks}/subdevice?${q}`, payload: { category: "webhook", type: "sensor", shortName: "Bell", data: "bell" } })).json() as Env<{ id: string; token: string }>;
    const tickle = `${t.baseUrl as string}/device/${hooks}/subdevice/${sensor.data.id}/tickle/${sensor.data.token}`;
    const actuator = await t.api({ method: "POST", url: `/device/${hooks}/subdevice?${q}`, payload: { category: "webhook", type: "actuator", shortName: "Loop", data: "loop", url: tickle } });
    expect(actuator.statusCode).toBe(200);
    const created = await t.api({
      method: "POST",
      url: `/rule?${q}`,
      payload: { shortName: "loop", timeout: 0, preconditions: [{ handler: "serviceChange", params: { guid: hooks, to: "bell" } }], actions: [{ handler: "serviceSendCommand", params: { guid: hooks, da: "loop" } }] },
    });
    expect(created.statusCode).toBe(200);
    const rid = (created.json() as Env<{ rid: string }>).data.rid;
    expect((await fetch(tickle, { method: "POST" })).status).toBe(200);
    const engine = t.server.services.automation.engine;
    await expect.poll(() => engine.stats.loops, { timeout: 5000 }).toBe(1);
    await engine.idle();
    const history = ((await t.api({ method: "GET", url: `/rule/${rid}?${q}` })).json() as Env<{ history: { ok: boolean; error: string | null }[] }>).data.history;
    expect(history.map((h) => h.ok).sort()).toEqual([false, true]);
    expect(history.find((h) => !h.ok)?.error).toMatch(/loop stopped: .*caused by this rule's own actions/);
    expect(engine.stats.runs).toBe(1);
  });

  it("suspends a rule that fires too fast for too long when the loop hides its cause (a relay strips X-Blockkit-Cause)", async () => {
    t = await startTestServer({ automation: { rules: { firingRate: { maxFiringsPerSecond: 5, hotSeconds: 2 } } } }, { listen: true });
    const q = `user_access_token=${t.token}`;
    const hooks = ((await t.server.api.inject({ method: "GET", url: `/auth/webhook?${q}` })).json() as Env<{ guid: string }>).data.guid;
    const sensor = (await t.api({ method: "POST", url: `/device/${hooks}/subdevice?${q}`, payload: { category: "webhook", type: "sensor", shortName: "Bell", data: "bell" } })).json() as Env<{ id: string; token: string }>;
    const tickle = `${t.baseUrl as string}/device/${hooks}/subdevice/${sensor.data.id}/tickle/${sensor.data.token}`;
    // The relay: another service that calls the tickle URL for each webhook it gets, without the cause header.
    let relayed = 0;
    const relay = createServer((req, res) => {
      relayed++;
      expect(req.headers["x-blockkit-cause"]).toBeDefined();
      req.resume();
      res.end("{}");
      void fetch(tickle, { method: "POST" }).catch(() => undefined);
    });
    await new Promise<void>((r) => relay.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(relay.address() as AddressInfo).port}/relay`;
      await t.api({ method: "POST", url: `/device/${hooks}/subdevice?${q}`, payload: { category: "webhook", type: "actuator", shortName: "Relay", data: "relay", url } });
      const created = await t.api({
        method: "POST",
        url: `/rule?${q}`,
        payload: { shortName: "via relay", timeout: 0, preconditions: [{ handler: "serviceChange", params: { guid: hooks, to: "bell" } }], actions: [{ handler: "serviceSendCommand", params: { guid: hooks, da: "relay" } }] },
      });
      const rid = (created.json() as Env<{ rid: string }>).data.rid;
      expect((await fetch(tickle, { method: "POST" })).status).toBe(200);
      const engine = t.server.services.automation.engine;
      await expect.poll(() => engine.stats.suspended, { timeout: 10_000 }).toBe(1);
      await expect.poll(async () => ((await t.api({ method: "GET", url: `/rule/${rid}?${q}` })).json() as Env<{ suspended: boolean }>).data.suspended, { timeout: 5000 }).toBe(true);
      await engine.idle();
      const rule = ((await t.api({ method: "GET", url: `/rule/${rid}?${q}` })).json() as Env<{ history: { ok: boolean; error: string | null }[] }>).data;
      expect(rule.history.find((h) => !h.ok && h.error?.startsWith("suspended"))?.error).toMatch(/^suspended: fired more than 5 times a second for 2 seconds in a row/);
      // The header-based detection never saw it; the loop is over: a tickle no longer fires the rule.
      expect(engine.stats.loops).toBe(0);
      expect(relayed).toBeGreaterThan(10);
      const fired = engine.stats.fired;
      expect((await fetch(tickle, { method: "POST" })).status).toBe(200);
      await engine.idle();
      expect(engine.stats.fired).toBe(fired);
    } finally {
      relay.closeAllConnections();
      await new Promise<void>((r) => relay.close(() => r()));
    }
  });

  it("spreads the runs of many rules fired by one event over turns of the event loop", async () => {
    t = await startTestServer({ automation: { rules: { runsPerTurn: 50 } } });
    const NODE = "RULESLOAD0001";
    const bt = await t.activate(NODE);
    const send = (DA: string) => t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 5, DA } });
    await send("0");
    await t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 1002, DA: "0" } });
    const engine = t.server.services.automation.engine;
    const N = 1000;
    // Stored rules, through the API: a firing is a job of a stored rule (rule_jobs.rule_id), on
    // both stores; a rule only given to the engine is refused when it fires.
    for (let i = 0; i < N; i++) {
      const created = await t.api({
        method: "POST",
        url: `/rule?user_access_token=${t.token}`,
        payload: { shortName: `r${i}`, timeout: 0, preconditions: [{ handler: "serviceChange", params: { guid: `${NODE}_0_0_5`, to: "1" } }], actions: [{ handler: "serviceSendCommand", params: { guid: `${NODE}_0_0_1002`, da: "1" } }] },
      });
      expect(created.statusCode).toBe(200);
    }
    // Count the turns of the event loop (setImmediate ticks) until every run has finished.
    let turns = 0;
    let counting = true;
    const tick = (): void => {
      turns++;
      if (counting) setImmediate(tick);
    };
    await send("1");
    setImmediate(tick);
    await expect.poll(() => engine.stats.runs, { timeout: 20_000 }).toBe(N);
    counting = false;
    expect(turns).toBeGreaterThanOrEqual(N / 50);
  });
});

describe("the firing-rate backstop", () => {
  it("trips only after more than N firings in each of M consecutive seconds", () => {
    const burst = (r: FiringRate, second: number, n: number): boolean[] => Array.from({ length: n }, (_, i) => r.fired(second * 1000 + i));
    const r = new FiringRate(20, 3);
    // A burst of 100 in one second, then quiet: never trips.
    expect(burst(r, 10, 100).some(Boolean)).toBe(false);
    expect(burst(r, 12, 21).some(Boolean)).toBe(false);
    // 21, 21, then the 21st of the third second in a row trips.
    expect(burst(r, 13, 21).some(Boolean)).toBe(false);
    const third = burst(r, 14, 21);
    expect(third.indexOf(true)).toBe(20);
    // Exactly 20 a second, for ever: never trips.
    const steady = new FiringRate(20, 3);
    for (let s = 0; s < 10; s++) expect(burst(steady, 100 + s, 20).some(Boolean)).toBe(false);
  });
});
