import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type TestServer, startTestServer } from "../../helpers/server.js";
import { waitFor } from "../../helpers/wait.js";
import { type Receiver, startReceiver } from "./helpers.js";

const NODE = "SUBDEV000001";
const RF = `${NODE}_0_0_11`;

interface Env<T = unknown> {
  result: number;
  error: string | null;
  data: T;
}

describe("sub-devices", () => {
  let t: TestServer;
  let bt: string;
  let receiver: Receiver;
  const q = (): string => `user_access_token=${t.token}`;
  const data = (DA: string, D = 11) =>
    t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D, DA } });

  beforeEach(async () => {
    receiver = await startReceiver();
    t = await startTestServer({ smsUrl: `${receiver.url}/sms` });
    bt = await t.activate(NODE);
    await data("0101");
  });
  afterEach(async () => {
    await t.close();
    await receiver.close();
  });

  async function addWebhooks(): Promise<string> {
    const res = await t.server.api.inject({ method: "GET", url: `/auth/webhook?${q()}` });
    return (res.json() as Env<{ guid: string }>).data.guid;
  }

  it("creates an rf sub-device on an rf433 device and shows it in the device JSON", async () => {
    const res = await t.api({ method: "POST", url: `/device/${RF}/subdevice?${q()}`, payload: { category: "rf", type: "sensor", shortName: "Door", data: "0110" } });
    expect(res.statusCode).toBe(200);
    const id = (res.json() as Env<{ id: string }>).data.id;
    expect(id).toMatch(/^s[0-9a-z]{7}$/);
    const dev = (await t.api({ method: "GET", url: `/device/${RF}?${q()}` })).json() as Env<{ has_subdevice_count: number; subDevices: Record<string, unknown> }>;
    expect(dev.data.has_subdevice_count).toBe(1);
    expect(dev.data.subDevices[id]).toEqual({ category: "rf", type: "sensor", shortName: "Door", data: "0110" });
    const list = (await t.api({ method: "GET", url: `/devices?${q()}` })).json() as Env<Record<string, { subDevices: Record<string, unknown> }>>;
    expect(Object.keys(list.data[RF]?.subDevices ?? {})).toEqual([id]);
  });

  it("refuses a category that does not fit the parent, and bad fields", async () => {
    await data("20", 9);
    const temp = `${NODE}_0_0_9`;
    const rfOnTemp = await t.api({ method: "POST", url: `/device/${temp}/subdevice?${q()}`, payload: { category: "rf", type: "sensor", shortName: "x", data: "01" } });
    expect(rfOnTemp.statusCode).toBe(400);
    expect((rfOnTemp.json() as Env).error).toContain("rf433");
    const badType = await t.api({ method: "POST", url: `/device/${RF}/subdevice?${q()}`, payload: { category: "rf", type: "both", shortName: "x" } });
    expect(badType.statusCode).toBe(400);
    const urlOnRf = await t.api({ method: "POST", url: `/device/${RF}/subdevice?${q()}`, payload: { category: "rf", type: "actuator", shortName: "x", data: "01", url: "http://x/" } });
    expect((urlOnRf.json() as Env).error).toContain("url is only for a webhook actuator");
    const other = await t.addUser("other");
    const foreign = await t.api({ method: "POST", url: `/device/${RF}/subdevice?user_access_token=${other}`, payload: { category: "rf", type: "sensor", shortName: "x", data: "01" } });
    expect(foreign.statusCode).toBe(404);
  });

  it("creating a webhook sub-device without the Webhooks device fails with a clear error", async () => {
    const res = await t.api({ method: "POST", url: `/device/${RF}/subdevice?${q()}`, payload: { category: "webhook", type: "sensor", shortName: "Hook" } });
    expect(res.statusCode).toBe(409);
    expect((res.json() as Env).error).toContain("needs the Webhooks device");
  });

  it("a webhook sensor's tickle counts and emits a data event; a wrong token is rejected", async () => {
    const hooks = await addWebhooks();
    const res = await t.api({ method: "POST", url: `/device/${hooks}/subdevice?${q()}`, payload: { category: "webhook", type: "sensor", shortName: "Bell" } });
    const { id, token } = (res.json() as Env<{ id: string; token: string }>).data;
    expect(token.length).toBeGreaterThan(30);
    const wrong = await t.api({ method: "POST", url: `/device/${hooks}/subdevice/${id}/tickle/${token}x` });
    expect(wrong.statusCode).toBe(401);
    expect((await t.api({ method: "POST", url: `/device/${hooks}/subdevice/s0000000/tickle/${token}` })).statusCode).toBe(401);
    const good = await t.api({ method: "POST", url: `/device/${hooks}/subdevice/${id}/tickle/${token}` });
    expect(good.json()).toEqual({ result: 1, error: null, id: 0 });
    const dev = (await t.api({ method: "GET", url: `/device/${hooks}?${q()}` })).json() as Env<{ last_data: { DA: unknown }; subDevices: Record<string, Record<string, unknown>> }>;
    expect(dev.data.last_data.DA).toBe(id);
    expect(dev.data.subDevices[id]?.token).toBeUndefined();
    const counts = (await t.api({ method: "GET", url: `/device/${hooks}/subdevice/${id}/data?interval=1hour&${q()}` })).json() as Env<{ t: string; v: number }[]>;
    expect(counts.data.map((p) => p.v)).toEqual([1]);
    expect(counts.data[0]?.t).toMatch(/^\d{4}-\d\d-\d\dT\d\d:00:00\.000\+0000$/);
  });

  it("actuating a webhook actuator calls its url", async () => {
    const hooks = await addWebhooks();
    const res = await t.api({ method: "POST", url: `/device/${hooks}/subdevice?${q()}`, payload: { category: "webhook", type: "actuator", shortName: "Lamp", data: "lamp-on", url: `${receiver.url}/hook` } });
    const { id } = (res.json() as Env<{ id: string }>).data;
    const put = await t.api({ method: "PUT", url: `/device/${hooks}?${q()}`, payload: { DA: "lamp-on" } });
    expect(put.json()).toEqual({ result: 1, error: null, id: 0 });
    const got = await receiver.nth(1);
    expect(got.url).toBe("/hook");
    expect(JSON.parse(got.body.toString())).toMatchObject({ id, data: "lamp-on", DA: "lamp-on" });
    receiver.status = 500;
    const failing = await t.api({ method: "PUT", url: `/device/${hooks}?${q()}`, payload: { DA: id } });
    expect(failing.statusCode).toBe(503);
    expect((failing.json() as Env).error).toMatch(/the call failed \(no 2xx answer within \d+ ms\)/);
    const unknown = await t.api({ method: "PUT", url: `/device/${hooks}?${q()}`, payload: { DA: "nothing" } });
    expect((unknown.json() as Env).error).toContain('no webhook actuator with data or id "nothing"');
  });

  it("rf sensors count their code; rf actuators send their code to the parent", async () => {
    const mk = async (type: string, code: string) =>
      ((await t.api({ method: "POST", url: `/device/${RF}/subdevice?${q()}`, payload: { category: "rf", type, shortName: type, data: code } })).json() as Env<{ id: string }>).data.id;
    const sensor = await mk("sensor", "1111");
    const actuator = await mk("actuator", "0000");
    await data("1111");
    await data("1010");
    await data("1111");
    await waitFor("two rf actuations", async () => {
      const r = (await t.api({ method: "GET", url: `/device/${RF}/subdevice/${sensor}/data?interval=1day&${q()}` })).json() as Env<{ v: number }[]>;
      return r.data[0]?.v === 2;
    }, 3000);
    await t.api({ method: "PUT", url: `/device/${RF}?${q()}`, payload: { DA: actuator } });
    const cmds = (await t.api({ method: "GET", url: `/block/${NODE}/commands`, headers: { "x-service-token": bt } })).json() as { DEVICE: { DA: string }[] };
    expect(cmds.DEVICE.map((c) => c.DA)).toEqual(["0000"]);
    const counted = (await t.api({ method: "GET", url: `/device/${RF}/subdevice/${actuator}/data?${q()}` })).json() as Env<unknown[]>;
    expect(counted.data).toHaveLength(1);
    // A deleted actuator leaves commands naming it harmless: a clear error, nothing queued.
    await t.api({ method: "DELETE", url: `/device/${RF}/subdevice/${actuator}?${q()}` });
    const gone = await t.api({ method: "PUT", url: `/device/${RF}?${q()}`, payload: { DA: actuator } });
    expect((gone.json() as Env).error).toContain("does not exist");
  });

  it("updates and deletes a sub-device", async () => {
    const res = await t.api({ method: "POST", url: `/device/${RF}/subdevice?${q()}`, payload: { category: "rf", type: "sensor", shortName: "A", data: "01" } });
    const { id } = (res.json() as Env<{ id: string }>).data;
    const put = await t.api({ method: "PUT", url: `/device/${RF}/subdevice/${id}?${q()}`, payload: { shortName: "B", data: "10" } });
    expect(put.json()).toEqual({ result: 1, error: null, id: 0 });
    const noBody = await t.api({ method: "PUT", url: `/device/${RF}/subdevice/${id}?${q()}` });
    expect(noBody.statusCode).toBe(400);
    expect((noBody.json() as Env).error).toContain("body");
    const badPut = await t.api({ method: "PUT", url: `/device/${RF}/subdevice/${id}?${q()}`, payload: { data: "xyz" } });
    expect(badPut.statusCode).toBe(400);
    const dev = (await t.api({ method: "GET", url: `/device/${RF}?${q()}` })).json() as Env<{ subDevices: Record<string, { shortName: string; data: string }> }>;
    expect(dev.data.subDevices[id]).toMatchObject({ shortName: "B", data: "10" });
    expect((await t.api({ method: "DELETE", url: `/device/${RF}/subdevice/${id}?${q()}` })).statusCode).toBe(200);
    expect((await t.api({ method: "DELETE", url: `/device/${RF}/subdevice/${id}?${q()}` })).statusCode).toBe(404);
    const after = (await t.api({ method: "GET", url: `/device/${RF}?${q()}` })).json() as Env<{ has_subdevice_count: number }>;
    expect(after.data.has_subdevice_count).toBe(0);
  });

  it("sms actuators post {to, body} to the SMS gateway", async () => {
    const sms = ((await t.server.api.inject({ method: "GET", url: `/auth/sms?${q()}` })).json() as Env<{ guid: string }>).data.guid;
    const res = await t.api({ method: "POST", url: `/device/${sms}/subdevice?${q()}`, payload: { category: "sms", type: "actuator", shortName: "Me", data: "+447700900123" } });
    expect(res.statusCode).toBe(200);
    const put = await t.api({ method: "PUT", url: `/device/${sms}?${q()}`, payload: { DA: "The door opened" } });
    expect(put.json()).toEqual({ result: 1, error: null, id: 0 });
    const got = await receiver.nth(1);
    expect(got.url).toBe("/sms");
    expect(JSON.parse(got.body.toString())).toEqual({ to: "+447700900123", body: "The door opened" });
  });
});

describe("sms without a gateway", () => {
  let t: TestServer;
  afterEach(async () => {
    await t.close();
  });
  it("fails with a clear error when no --sms-url is configured", async () => {
    t = await startTestServer();
    const q = `user_access_token=${t.token}`;
    const sms = ((await t.server.api.inject({ method: "GET", url: `/auth/sms?${q}` })).json() as Env<{ guid: string }>).data.guid;
    await t.api({ method: "POST", url: `/device/${sms}/subdevice?${q}`, payload: { category: "sms", type: "actuator", shortName: "Me", data: "+447700900123" } });
    const put = await t.api({ method: "PUT", url: `/device/${sms}?${q}`, payload: { DA: "hi" } });
    expect(put.statusCode).toBe(503);
    expect((put.json() as Env).error).toContain("--sms-url");
  });
});
