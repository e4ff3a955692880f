/** /devices and /device/:guid: list, get, PUT (DA and/or shortName), DELETE and re-creation, heartbeat. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { OK, asBlock, asUser, expectRefused, freshNode } from "../helpers/core.js";
import { type TestServer, startTestServer } from "../helpers/server.js";


describe("devices", () => {
  let t: TestServer;
  let bt: string;
  let user: string;
  let NODE: string;
  let TEMP: string;
  let RELAY: string;
  beforeAll(async () => {
    t = await startTestServer({ pollHoldSeconds: 0.2 });
  });
  afterAll(async () => {
    await t.close();
  });
  // Each test: a fresh user with a fresh block, on the shared server.
  beforeEach(async () => {
    NODE = freshNode("DEVICES");
    TEMP = `${NODE}_0_0_9`;
    RELAY = `${NODE}_0_0_1002`;
    user = await t.addUser(`u${NODE}`);
    bt = await t.activate(NODE, user);
    await asBlock(t, NODE, bt, "heartbeat", [
      { G: "0", V: 0, D: 9, DA: "19.5" },
      { G: "0", V: 0, D: 1002, DA: "0" },
    ]);
  });
  const call = <T = { result: number; error: string | null; id: number; data: unknown }>(
    method: "GET" | "POST" | "PUT" | "DELETE",
    path: string,
    payload?: unknown,
  ) => asUser<T>(t, method, path, payload, user);
  const commands = async (): Promise<unknown[]> => (await asBlock<{ DEVICE: unknown[] }>(t, NODE, bt, "commands")).body.DEVICE;

  it("lists devices keyed by GUID with every spec field, and gets one with its guid", async () => {
    const list = await call<{ data: Record<string, Record<string, unknown>> }>("GET", "/devices");
    expect(list.body).toMatchObject(OK);
    const entry = list.body.data[TEMP];
    expect(entry).toEqual({
      vid: "0",
      did: "9",
      gid: "0",
      node: NODE,
      device_type: "temperature",
      default_name: "Temperature",
      shortName: "Temperature",
      css_class: "temperature sensor",
      is_sensor: 1,
      is_actuator: 0,
      is_silent: 0,
      has_time_series: 1,
      has_subdevice_count: 0,
      meta: {},
      subDevices: {},
      last_data: { DA: 19.5, timestamp: expect.any(Number) },
    });
    const one = await call<{ data: Record<string, unknown> }>("GET", `/device/${TEMP}`);
    expect(one.body).toEqual({ ...OK, data: { guid: TEMP, ...entry } });
  });

  it("PUT with DA queues a command for an actuator", async () => {
    expect((await call("PUT", `/device/${RELAY}`, { DA: "1" })).body).toEqual(OK);
    expect((await call("PUT", `/device/${RELAY}`, { DA: 0 })).body).toEqual(OK);
    expect(await commands()).toEqual([
      { G: "0", V: 0, D: 1002, DA: "1", GUID: RELAY },
      { G: "0", V: 0, D: 1002, DA: "0", GUID: RELAY },
    ]);
  });

  it("PUT with shortName renames; the list shows the new title", async () => {
    expect((await call("PUT", `/device/${TEMP}`, { shortName: "Kitchen" })).body).toEqual(OK);
    const list = await call<{ data: Record<string, { shortName: string; default_name: string }> }>("GET", "/devices");
    expect(list.body.data[TEMP]).toMatchObject({ shortName: "Kitchen", default_name: "Temperature" });
  });

  it("PUT with DA to a pure sensor fails with 400 and sends nothing", async () => {
    expectRefused(await call("PUT", `/device/${TEMP}`, { DA: "1" }), 400, TEMP, /not an actuator/);
    expect(await commands()).toEqual([]);
  });

  it("PUT with both: both are attempted; result 0 when either failed", async () => {
    // Both succeed.
    expect((await call("PUT", `/device/${RELAY}`, { DA: "1", shortName: "Lamp" })).body).toEqual(OK);
    // The command fails (a sensor), the rename still happens; the answer is result 0.
    const mixed = await call("PUT", `/device/${TEMP}`, { DA: "1", shortName: "Hall" });
    expectRefused(mixed, 400, /not an actuator/);
    const list = await call<{ data: Record<string, { shortName: string }> }>("GET", "/devices");
    expect(list.body.data[TEMP]?.shortName).toBe("Hall");
    expect(list.body.data[RELAY]?.shortName).toBe("Lamp");
    expect(await commands()).toEqual([{ G: "0", V: 0, D: 1002, DA: "1", GUID: RELAY }]);
  });

  it("PUT with neither DA nor shortName is 400", async () => {
    expectRefused(await call("PUT", `/device/${RELAY}`, {}), 400, /DA/, /shortName/);
    expectRefused(await call("PUT", `/device/${RELAY}`), 400, /body/);
  });

  it("GET heartbeat returns the heartbeat record", async () => {
    const hb = await call<{ data: Record<string, unknown> }>("GET", `/device/${TEMP}/heartbeat`);
    expect(hb.body).toEqual({ ...OK, data: { G: "0", V: 0, D: 9, DA: 19.5, GUID: TEMP, timestamp: expect.any(Number), node: NODE } });
  });

  it("DELETE removes the device and its data; the next heartbeat re-creates it fresh", async () => {
    await call("PUT", `/device/${TEMP}`, { shortName: "Old name" });
    expect((await call("DELETE", `/device/${TEMP}`)).body).toEqual(OK);
    expectRefused(await call("GET", `/device/${TEMP}`), 404, TEMP);
    expectRefused(await call("GET", `/device/${TEMP}/heartbeat`), 404, TEMP);
    expectRefused(await call("DELETE", `/device/${TEMP}`), 404, TEMP);
    const list = await call<{ data: Record<string, unknown> }>("GET", "/devices");
    expect(Object.keys(list.body.data)).toEqual([RELAY]);

    await asBlock(t, NODE, bt, "heartbeat", [{ G: "0", V: 0, D: 9, DA: "20.5" }]);
    const back = await call<{ data: { shortName: string; last_data: { DA: unknown } } }>("GET", `/device/${TEMP}`);
    expect(back.body.data).toMatchObject({ shortName: "Temperature", last_data: { DA: 20.5 } });
    const hist = await call<{ data: { v: unknown }[] }>("GET", `/device/${TEMP}/data?from=0`);
    expect(hist.body.data.map((p) => p.v)).toEqual([20.5]);
  });

  it("DELETE of an actuator drops its queued commands", async () => {
    await call("PUT", `/device/${RELAY}`, { DA: "1" });
    await call("DELETE", `/device/${RELAY}`);
    expect(await commands()).toEqual([]);
  });
});
