/**
 * A JSON body field of the wrong type is a 400 naming the field, over real HTTP on loopback: the
 * validator coerces query strings and path parameters (text), never a body, so `{"DA": null}` is
 * not an empty command, `{"G": true}` not port "true", `{"shortName": ["a"]}` not a rename to "a".
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OK, expectRefused } from "../helpers/core.js";
import { http } from "../helpers/http.js";
import { type TestServer, startTestServer } from "../helpers/server.js";

const NODE = "BODYTYPES0001";
const LED = `${NODE}_0_0_1000`;
const RF = `${NODE}_1_0_11`;

describe("JSON body types", () => {
  let t: TestServer;
  let bt: string;
  let base: string;
  const user = (method: string, path: string, json?: unknown) =>
    http(`${base}${path}${path.includes("?") ? "&" : "?"}user_access_token=${t.token}`, { method, json });
  const block = (kind: string, json: unknown) => http(`${base}/block/${NODE}/${kind}`, { method: "POST", json, headers: { "x-service-token": bt } });

  beforeAll(async () => {
    t = await startTestServer({ pollHoldSeconds: 0.05 }, { listen: true });
    base = t.baseUrl as string;
    bt = await t.activate(NODE);
    expect((await block("heartbeat", [{ G: "0", V: 0, D: 1000, DA: "000000" }, { G: "1", V: 0, D: 11, DA: "0101" }])).body).toEqual(OK);
  });
  afterAll(async () => {
    await t?.close();
  });

  it("PUT /device/:guid: DA and shortName of another type are 400, and nothing is sent or renamed", async () => {
    for (const DA of [null, true, ["a"], { v: 1 }]) expectRefused(await user("PUT", `/device/${LED}`, { DA }), 400, /body\/DA must be string or number/);
    for (const shortName of [5, true, null, ["a"]]) expectRefused(await user("PUT", `/device/${LED}`, { shortName }), 400, /body\/shortName must be string/);
    const poll = await http(`${base}/block/${NODE}/commands`, { headers: { "x-service-token": bt } });
    expect(poll.body).toEqual({ DEVICE: [] });
    expect((await user("GET", `/device/${LED}`)).body).toMatchObject({ data: { shortName: "On Board RGB LED" } });
    // The types the spec gives (and a number as DA, the documented leniency) still pass.
    expect((await user("PUT", `/device/${LED}`, { DA: "FF0000", shortName: "Lamp" })).body).toEqual(OK);
    expect((await user("PUT", `/device/${LED}`, { DA: 1 })).body).toEqual(OK);
  });

  it("block events: G, DA and type of another type are 400, and no device is made of them", async () => {
    expectRefused(await block("data", { G: true, V: 0, D: 1002, DA: "1" }), 400, /body\/G must be string or integer/);
    expectRefused(await block("data", { G: ["7"], V: 0, D: 1002, DA: "1" }), 400, /body\/G/);
    for (const DA of [null, false, ["x"]]) expectRefused(await block("data", { G: "2", V: 0, D: 1002, DA }), 400, /body\/DA must be string or number/);
    expectRefused(await block("heartbeat", [{ G: "2", V: 0, D: 1002, DA: null }]), 400, /body\/0\/DA/);
    expectRefused(await block("config", { G: "2", V: 0, D: 1002, type: 1 }), 400, /body\/type must be string/);
    const devices = (await user("GET", "/devices")).body as { data: Record<string, unknown> };
    expect(Object.keys(devices.data).sort()).toEqual([LED, RF].sort());
    // What the docs accept beside the spec's types: G a number, V and D strings of digits, DA a number.
    expect((await block("data", { G: 2, V: "0", D: "1002", DA: 0 })).body).toEqual(OK);
  });

  it("claims, callbacks, sub-devices and rules: a string field given another type is 400", async () => {
    expectRefused(await user("POST", "/block", { nodeid: 123456789012 }), 400, /body\/nodeid must be string/);
    expectRefused(await user("POST", `/device/${LED}/callback`, { url: ["http://example.com/"] }), 400, /body\/url must be string/);
    const sub = { category: "rf", type: "sensor", shortName: "door", data: "0101" };
    expectRefused(await user("POST", `/device/${RF}/subdevice`, { ...sub, data: 101 }), 400, /body\/data must be string/);
    expectRefused(await user("POST", `/device/${RF}/subdevice`, { ...sub, shortName: 7 }), 400, /body\/shortName must be string/);
    const rule = {
      shortName: "r",
      preconditions: [{ handler: "serviceChange", params: { guid: RF, to: "0101" } }],
      actions: [{ handler: "serviceSendCommand", params: { guid: LED, da: "FF0000" } }],
    };
    expectRefused(await user("POST", "/rule", { ...rule, shortName: 5 }), 400, /body\/shortName must be string/);
    expect((await user("POST", "/rule", rule)).status).toBe(200);
  });

  it("query strings are still text coerced to their types", async () => {
    const r = await user("GET", `/device/${LED}/data?from=0&to=${Date.now() + 1000}&interval=1day&fn=count`);
    expect(r.status).toBe(200);
  });
});
