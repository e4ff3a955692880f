import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, startTestServer } from "../../helpers/server.js";

const NODE = "RULESCRUD001";
const BUTTON = `${NODE}_0_0_5`;
const RELAY = `${NODE}_0_0_1002`;

interface Env<T = unknown> {
  result: number;
  error: string | null;
  data: T;
}

describe("rules CRUD", () => {
  let t: TestServer;
  let other: string;
  const q = (token = t.token): string => `user_access_token=${token}`;
  const rule = (over: Record<string, unknown> = {}) => ({
    shortName: "Button to relay",
    preconditions: [{ handler: "serviceChange", params: { guid: BUTTON, to: "1", shortName: "Button" } }],
    actions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "1" } }],
    ...over,
  });
  const post = (body: unknown, token = t.token) => t.api({ method: "POST", url: `/rule?${q(token)}`, payload: body as Record<string, unknown> });

  beforeAll(async () => {
    t = await startTestServer();
    const bt = await t.activate(NODE);
    for (const D of [5, 1002]) {
      await t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D, DA: "0" } });
    }
    other = await t.addUser("other");
  });
  afterAll(async () => {
    await t.close();
  });

  it("creates (rid a string), lists and gets (rid a number) exactly as the spec", async () => {
    const res = await post(rule());
    expect(res.statusCode).toBe(200);
    const { rid } = (res.json() as Env<{ rid: string }>).data;
    expect(rid).toMatch(/^\d+$/);
    const expected = {
      rid: Number(rid),
      shortName: "Button to relay",
      preconditions: [{ handler: "serviceChange", params: { guid: BUTTON, to: "1", shortName: "Button" } }],
      actions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "1" } }],
      timeout: 0,
      store: {},
      suspended: false,
    };
    const list = (await t.api({ method: "GET", url: `/rule?${q()}` })).json() as Env<unknown[]>;
    expect(list.data).toContainEqual(expected);
    const one = (await t.api({ method: "GET", url: `/rule/${rid}?${q()}` })).json() as Env<Record<string, unknown>>;
    expect(one.data).toEqual({ ...expected, history: [] });
    expect((await t.api({ method: "GET", url: `/rule/${rid}?${q(other)}` })).statusCode).toBe(404);
    expect((await t.api({ method: "GET", url: `/rule?${q(other)}` })).json()).toMatchObject({ data: [] });
  });

  it("never gives a deleted rule's rid to a new rule", async () => {
    const rid = (await post(rule())).json<Env<{ rid: string }>>().data.rid;
    expect((await t.api({ method: "DELETE", url: `/rule/${rid}?${q()}` })).statusCode).toBe(200);
    const next = (await post(rule())).json<Env<{ rid: string }>>().data.rid;
    expect(Number(next)).toBeGreaterThan(Number(rid));
    expect((await t.api({ method: "GET", url: `/rule/${rid}?${q()}` })).statusCode).toBe(404);
  });

  it("accepts the original platform's handler names and stores the spec's", async () => {
    const body = rule({
      preconditions: [{ handler: "ninjaRangeToggle", params: { guid: BUTTON, between: "1", and: 5 } }],
      actions: [
        { handler: "ninjaSendCommand", params: { guid: RELAY, da: 1 } },
        { handler: "sleep", params: { guid: "N/A", sleepLength: 10 } },
      ],
      timeout: 30,
    });
    const { rid } = ((await post(body)).json() as Env<{ rid: string }>).data;
    const one = (await t.api({ method: "GET", url: `/rule/${rid}?${q()}` })).json() as Env<Record<string, unknown>>;
    expect(one.data).toMatchObject({
      preconditions: [{ handler: "serviceRangeToggle", params: { guid: BUTTON, between: 1, and: 5 } }],
      actions: [
        { handler: "serviceSendCommand", params: { guid: RELAY, da: "1" } },
        { handler: "sleep", params: { guid: "N/A", sleepLength: 10 } },
      ],
      timeout: 30,
    });
  });

  it.each([
    [{ actions: [{ handler: "launchRocket", params: {} }] }, 'actions[0]: unknown handler "launchRocket"'],
    [{ actions: [{ handler: "serviceSendCommand", params: { guid: RELAY } }] }, "actions[0] (serviceSendCommand): params.da is required"],
    [{ preconditions: [{ handler: "serviceChange", params: { to: "1" } }] }, "preconditions[0] (serviceChange): params.guid is required"],
    [{ preconditions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "1" } }] }, "is an action, not allowed in preconditions"],
    [{ preconditions: [{ handler: "serviceRangeToggle", params: { guid: BUTTON, between: "a", and: 2 } }] }, "params.between must be a number"],
    [{ actions: [{ handler: "sendEmail", params: { to: "nobody", subject: "s", body: "b" } }] }, 'params.to "nobody" is not an e-mail address'],
    [{ actions: [{ handler: "getServiceSnapshot", params: { guid: RELAY } }] }, "is not a camera"],
    [{ actions: [{ handler: "serviceSendCommand", params: { guid: BUTTON, da: "1" } }] }, "is not an actuator"],
    [{ preconditions: [] }, "preconditions"],
  ])("refuses %j with a 400 naming the problem", async (over, message) => {
    const res = await post(rule(over));
    expect(res.statusCode).toBe(400);
    expect((res.json() as Env).error).toContain(message);
  });

  it("refuses GUIDs the user does not own", async () => {
    const res = await post(rule(), other);
    expect(res.statusCode).toBe(400);
    expect((res.json() as Env).error).toContain(`names device ${BUTTON}, which is not one of your devices`);
  });

  it("replaces, suspends, unsuspends and deletes", async () => {
    const { rid } = ((await post(rule())).json() as Env<{ rid: string }>).data;
    const put = await t.api({ method: "PUT", url: `/rule/${rid}?${q()}`, payload: rule({ shortName: "Renamed", timeout: 5 }) });
    expect(put.json()).toEqual({ result: 1, error: null, id: 0 });
    const badPut = await t.api({ method: "PUT", url: `/rule/${rid}?${q()}`, payload: { shortName: "x" } });
    expect(badPut.statusCode).toBe(400);
    const get = async () => ((await t.api({ method: "GET", url: `/rule/${rid}?${q()}` })).json() as Env<{ shortName: string; timeout: number; suspended: boolean }>).data;
    expect(await get()).toMatchObject({ shortName: "Renamed", timeout: 5, suspended: false });
    expect((await t.api({ method: "POST", url: `/rule/${rid}/suspend?${q()}` })).statusCode).toBe(200);
    expect((await get()).suspended).toBe(true);
    expect((await t.api({ method: "DELETE", url: `/rule/${rid}/suspend?${q()}` })).statusCode).toBe(200);
    expect((await get()).suspended).toBe(false);
    expect((await t.api({ method: "POST", url: `/rule/${rid}/suspend?${q(other)}` })).statusCode).toBe(404);
    expect((await t.api({ method: "DELETE", url: `/rule/${rid}?${q()}` })).statusCode).toBe(200);
    expect((await t.api({ method: "GET", url: `/rule/${rid}?${q()}` })).statusCode).toBe(404);
    expect((await t.api({ method: "GET", url: `/rule/abc?${q()}` })).statusCode).toBe(400);
  });
});

describe("rules per user", () => {
  let t: TestServer;
  afterAll(async () => {
    await t.close();
  });
  it("refuses a rule beyond the per-user limit with a 409", async () => {
    t = await startTestServer({ automation: { rules: { maxRulesPerUser: 1 } } });
    const bt = await t.activate(NODE);
    for (const D of [5, 1002]) {
      await t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D, DA: "0" } });
    }
    const body = {
      shortName: "r",
      preconditions: [{ handler: "serviceChange", params: { guid: BUTTON, to: "1" } }],
      actions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "1" } }],
    };
    expect((await t.api({ method: "POST", url: `/rule?user_access_token=${t.token}`, payload: body })).statusCode).toBe(200);
    const second = await t.api({ method: "POST", url: `/rule?user_access_token=${t.token}`, payload: body });
    expect(second.statusCode).toBe(409);
    expect((second.json() as Env).error).toContain("the most allowed");
  });
});
