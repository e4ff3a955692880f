import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, startTestServer } from "../../helpers/server.js";
import { waitFor } from "../../helpers/wait.js";

const NODE = "RULESENGINE1";
const BUTTON = `${NODE}_0_0_5`;
const TEMP = `${NODE}_0_0_9`;
const RELAY = `${NODE}_0_0_1002`;
const LED = `${NODE}_0_0_1000`;

interface Env<T = unknown> {
  result: number;
  error: string | null;
  data: T;
}
interface Run {
  ok: boolean;
  error: string | null;
  steps: { handler: string; ok: boolean; ms: number; error?: string }[];
}

describe("rule engine", () => {
  let t: TestServer;
  let bt: string;
  let offset = 0;
  const rids: string[] = [];
  const q = (): string => `user_access_token=${t.token}`;
  const data = (D: number, DA: string) =>
    t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D, DA } });
  /** Takes the node's queued commands once every rule run has finished. */
  const commands = async (): Promise<string[]> => {
    await t.server.services.automation.engine.idle();
    const store = t.server.services.store;
    const rows = await store.commands.pending(NODE, Date.now() + offset);
    await store.commands.remove(rows.map((r) => r.id));
    return rows.map((c) => `${c.d}=${c.da}`);
  };
  const create = async (body: Record<string, unknown>): Promise<string> => {
    const res = await t.api({ method: "POST", url: `/rule?${q()}`, payload: { shortName: "r", ...body } });
    expect(res.statusCode).toBe(200);
    const rid = (res.json() as Env<{ rid: string }>).data.rid;
    rids.push(rid);
    return rid;
  };
  const history = async (rid: string): Promise<Run[]> =>
    ((await t.api({ method: "GET", url: `/rule/${rid}?${q()}` })).json() as Env<{ history: Run[] }>).data.history;
  const idle = () => t.server.services.automation.engine.idle();

  beforeAll(async () => {
    t = await startTestServer({ clock: () => Date.now() + offset, pollHoldSeconds: 1 });
    bt = await t.activate(NODE);
    for (const D of [5, 9, 1002, 1000]) await data(D, "0");
  });
  afterEach(async () => {
    for (const rid of rids.splice(0)) await t.api({ method: "DELETE", url: `/rule/${rid}?${q()}` });
    await idle();
    await commands();
  });
  afterAll(async () => {
    await t.close();
  });

  it("serviceChange fires serviceSendCommand on each matching event, and records the run", async () => {
    const rid = await create({
      preconditions: [{ handler: "serviceChange", params: { guid: BUTTON, to: "1" } }],
      actions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "1" } }],
    });
    await data(5, "0");
    await data(5, "1");
    // Over the block's long-poll once, then through the queue.
    const polled = await t.api({ method: "GET", url: `/block/${NODE}/commands`, headers: { "x-service-token": bt } });
    expect((polled.json() as { DEVICE: { GUID: string; DA: string }[] }).DEVICE).toMatchObject([{ GUID: RELAY, DA: "1" }]);
    await data(5, "1");
    expect(await commands()).toEqual(["1002=1"]);
    await idle();
    const runs = await history(rid);
    expect(runs).toHaveLength(2);
    expect(runs[0]).toMatchObject({ ok: true, error: null, steps: [{ handler: "serviceSendCommand", ok: true }] });
  });

  it("serviceRangeToggle fires when the value enters the range from outside, not while it stays", async () => {
    await create({
      preconditions: [{ handler: "serviceRangeToggle", params: { guid: TEMP, between: 20, and: 25 } }],
      actions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "on" } }],
    });
    for (const v of ["10", "21", "22", "30", "24.5"]) await data(9, v);
    await idle();
    expect(await commands()).toEqual(["1002=on", "1002=on"]);
  });

  it("fires only while every other precondition holds", async () => {
    await create({
      preconditions: [
        { handler: "serviceChange", params: { guid: BUTTON, to: "1" } },
        { handler: "serviceRangeToggle", params: { guid: TEMP, between: 0, and: 15 } },
      ],
      actions: [{ handler: "serviceSendCommand", params: { guid: LED, da: "FF0000" } }],
    });
    await data(9, "30");
    await data(5, "1");
    await data(9, "10");
    await data(5, "1");
    await idle();
    // The second press (cold) and entering the range while the button reads 1: two firings.
    expect(await commands()).toEqual(["1000=FF0000", "1000=FF0000"]);
  });

  it("waits `timeout` seconds between firings", async () => {
    await create({
      preconditions: [{ handler: "serviceChange", params: { guid: BUTTON, to: "1" } }],
      actions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "t" } }],
      timeout: 60,
    });
    await data(5, "1");
    await data(5, "1");
    await idle();
    expect(await commands()).toEqual(["1002=t"]);
    offset += 61_000;
    await data(5, "1");
    await idle();
    expect(await commands()).toEqual(["1002=t"]);
  });

  it("a replayed reading older than the device's latest fires nothing", async () => {
    await create({
      preconditions: [{ handler: "serviceChange", params: { guid: BUTTON, to: "1" } }],
      actions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "late" } }],
    });
    await data(5, "0");
    const old = Date.now() + offset - 3_600_000;
    const res = await t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 5, DA: "1", TIMESTAMP: old } });
    expect(res.statusCode).toBe(200);
    expect(await commands()).toEqual([]);
    await data(5, "1");
    expect(await commands()).toEqual(["1002=late"]);
  });

  it("suspended rules never fire; unsuspended ones do again", async () => {
    const rid = await create({
      preconditions: [{ handler: "serviceChange", params: { guid: BUTTON, to: "1" } }],
      actions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "s" } }],
    });
    await t.api({ method: "POST", url: `/rule/${rid}/suspend?${q()}` });
    await data(5, "1");
    await idle();
    expect(t.server.services.automation.engine.watched).toBe(0);
    await t.api({ method: "DELETE", url: `/rule/${rid}/suspend?${q()}` });
    await data(5, "1");
    await idle();
    expect(await commands()).toEqual(["1002=s"]);
  });

  it("runs actions serially with sleep in ms, and a failing action stops the run", async () => {
    const hooks = ((await t.server.api.inject({ method: "GET", url: `/auth/webhook?${q()}` })).json() as Env<{ guid: string }>).data.guid;
    const rid = await create({
      preconditions: [{ handler: "serviceChange", params: { guid: BUTTON, to: "1" } }],
      actions: [
        { handler: "serviceSendCommand", params: { guid: RELAY, da: "a" } },
        { handler: "sleep", params: { guid: "N/A", sleepLength: 150 } },
        { handler: "serviceSendCommand", params: { guid: hooks, da: "no-such-webhook" } },
        { handler: "serviceSendCommand", params: { guid: RELAY, da: "never" } },
      ],
    });
    await data(5, "1");
    const runs = await waitFor("a rule run", async () => {
      const h = await history(rid);
      return h.length > 0 ? h : undefined;
    }, 5000);
    expect(runs[0]?.ok).toBe(false);
    expect(runs[0]?.error).toContain('no webhook actuator with data or id "no-such-webhook"');
    expect(runs[0]?.steps.map((s) => [s.handler, s.ok])).toEqual([
      ["serviceSendCommand", true],
      ["sleep", true],
      ["serviceSendCommand", false],
    ]);
    expect(runs[0]?.steps[1]?.ms).toBeGreaterThanOrEqual(145);
    expect(await commands()).toEqual(["1002=a"]);
  });

  it("a deleted device or rule leaves nothing firing", async () => {
    const rid = await create({
      preconditions: [{ handler: "serviceChange", params: { guid: BUTTON, to: "1" } }],
      actions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "d" } }],
    });
    await t.api({ method: "DELETE", url: `/rule/${rid}?${q()}` });
    expect(t.server.services.automation.engine.watched).toBe(0);
    await data(5, "1");
    await idle();
    expect(await commands()).toEqual([]);
  });
});
