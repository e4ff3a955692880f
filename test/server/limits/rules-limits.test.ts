/**
 * Rules cannot take the server: the runs of many rules fired by one event are spread over turns of
 * the event loop (another user's request is answered meanwhile), and a rule whose own action chain
 * re-triggers it (rule -> webhook -> its own tickle URL) is stopped and the loop recorded.
 */
import { afterEach, describe, expect, it } from "vitest";
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

  it("spreads the runs of many rules fired by one event over turns of the event loop", async () => {
    t = await startTestServer({ automation: { rules: { runsPerTurn: 50 } } });
    const NODE = "RULESLOAD0001";
    const bt = await t.activate(NODE);
    const send = (DA: string) => t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 5, DA } });
    await send("0");
    await t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 1002, DA: "0" } });
    const engine = t.server.services.automation.engine;
    const N = 1000;
    for (let i = 0; i < N; i++) {
      await engine.sync({
        id: 100_000 + i,
        user_id: 1,
        short_name: `r${i}`,
        preconditions: [{ handler: "serviceChange", params: { guid: `${NODE}_0_0_5`, to: "1" } }],
        actions: [{ handler: "serviceSendCommand", params: { guid: `${NODE}_0_0_1002`, da: "1" } }],
        timeout: 0,
        suspended: false,
        created: 0,
      });
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
