/** Block events: heartbeat (array), data, config; device creation; last_data; last_active; TIMESTAMP; KEY. */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { OK, asBlock, asUser, expectRefused, freshNode } from "../helpers/core.js";
import { type TestServer, startTestServer } from "../helpers/server.js";
import { TOUCH_EVERY_MS } from "../../server/services/ingest.js";

type Dev = { guid?: string; device_type: string; default_name: string; shortName: string; is_sensor: number; is_actuator: number; has_time_series: number; meta: Record<string, unknown>; last_data: { DA: unknown; timestamp: number | null } };

describe("block events", () => {
  let t: TestServer;
  let bt: string;
  let NODE: string;
  beforeAll(async () => {
    t = await startTestServer();
  });
  beforeEach(async () => {
    NODE = freshNode("EVENTS");
    bt = await t.activate(NODE);
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  afterAll(async () => {
    await t.close();
  });

  const device = async (guid: string): Promise<Dev> => (await asUser<{ data: Dev }>(t, "GET", `/device/${guid}`)).body.data;
  const history = async (guid: string): Promise<{ t: string; v: unknown }[]> =>
    (await asUser<{ data: { t: string; v: unknown }[] }>(t, "GET", `/device/${guid}/data?from=0`)).body.data;

  it("a heartbeat is an array of readings; each creates its device from the device-type table", async () => {
    const res = await asBlock(t, NODE, bt, "heartbeat", [
      { G: "0", V: 0, D: 9, DA: "21.5" },
      { G: "0201", V: 0, D: 30, DA: "55" },
      { G: 2, V: 0, D: 1000, DA: "FF0000" },
      { G: "0", V: 7, D: 9, DA: "x" },
    ]);
    expect(res.body).toEqual(OK);
    const all = (await asUser<{ data: Record<string, Dev> }>(t, "GET", "/devices")).body.data;
    const list = Object.fromEntries(Object.entries(all).filter(([guid]) => guid.startsWith(`${NODE}_`)));
    expect(Object.keys(list).sort()).toEqual([`${NODE}_0201_0_30`, `${NODE}_0_0_9`, `${NODE}_0_7_9`, `${NODE}_2_0_1000`].sort());
    expect(list[`${NODE}_0_0_9`]).toMatchObject({ device_type: "temperature", default_name: "Temperature", shortName: "Temperature", is_sensor: 1, is_actuator: 0, has_time_series: 1, last_data: { DA: 21.5 } });
    expect(list[`${NODE}_0201_0_30`]).toMatchObject({ device_type: "humidity", default_name: "RF Humidity", gid: "0201", last_data: { DA: 55 } });
    // G given as a number is stored as a string; a non-numeric type keeps DA as text.
    expect(list[`${NODE}_2_0_1000`]).toMatchObject({ device_type: "rgbled", gid: "2", is_actuator: 1, last_data: { DA: "FF0000" } });
    expect(list[`${NODE}_0_7_9`]).toMatchObject({ device_type: "unknown", default_name: "Unknown device 7:9", is_sensor: 0, is_actuator: 0 });
    expect(list[`${NODE}_0_0_9`]).not.toHaveProperty("guid");
  });

  it("a single object is not a heartbeat", async () => {
    expectRefused(await asBlock(t, NODE, bt, "heartbeat", { G: "0", V: 0, D: 9, DA: "1" }), 400, /array/);
  });

  it("data updates last_data and is stored as history; a numeric DA may be a number", async () => {
    const before = Date.now();
    expect((await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 5, DA: "1" })).body).toEqual(OK);
    expect((await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 5, DA: 0 })).body).toEqual(OK);
    const d = await device(`${NODE}_0_0_5`);
    expect(d).toMatchObject({ guid: `${NODE}_0_0_5`, device_type: "button", last_data: { DA: 0 } });
    expect(d.last_data.timestamp).toBeGreaterThanOrEqual(before);
    expect(d.last_data.timestamp).toBeLessThanOrEqual(Date.now());
    expect((await history(`${NODE}_0_0_5`)).map((p) => p.v)).toEqual([1, 0]);
  });

  it("config events go into meta (plugged after UNPLUG/PLUGIN, config.<type> otherwise) and are not history", async () => {
    const guid = `${NODE}_1_0_9`;
    // An UNPLUG for an unknown device creates nothing (V12_1.00 sends one per empty port at boot);
    // any other config event for an unknown device creates it.
    expect((await asBlock(t, NODE, bt, "config", { G: "1", V: 0, D: 9, type: "UNPLUG" })).body).toEqual(OK);
    expect(await device(guid)).toBeUndefined();
    await asBlock(t, NODE, bt, "config", { G: "1", V: 0, D: 9, type: "PLUGIN" });
    expect((await device(guid)).meta).toEqual({ plugged: true });
    await asBlock(t, NODE, bt, "config", { G: "1", V: 0, D: 9, type: "UNPLUG" });
    expect((await device(guid)).meta).toEqual({ plugged: false });
    await asBlock(t, NODE, bt, "config", { G: "1", V: 0, D: 9, type: "PLUGIN" });
    await asBlock(t, NODE, bt, "config", { G: "1", V: 0, D: 9, type: "IP", ip: "10.0.0.7" });
    const meta = (await device(guid)).meta as { plugged: boolean; config: Record<string, { payload: Record<string, unknown>; timestamp: number }> };
    expect(meta.plugged).toBe(true);
    expect(meta.config.IP?.payload).toMatchObject({ type: "IP", ip: "10.0.0.7" });
    expect(await history(guid)).toEqual([]);
    expect((await device(guid)).last_data).toEqual({ DA: null, timestamp: null });
  });

  it("last_active of the block follows its events, recorded at most every TOUCH_EVERY_MS", async () => {
    const base = Date.now() + 86_400_000;
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(base);
    await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 9, DA: "1" });
    const first = (await asUser<{ data: { last_active: number } }>(t, "GET", `/block/${NODE}`)).body.data.last_active;
    expect(first).toBe(base);
    // Within TOUCH_EVERY_MS of the last touch the block's row is not rewritten.
    vi.setSystemTime(base + TOUCH_EVERY_MS - 1);
    await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 9, DA: "1" });
    expect((await asUser<{ data: { last_active: number } }>(t, "GET", `/block/${NODE}`)).body.data.last_active).toBe(base);
    vi.setSystemTime(base + 3_600_000);
    await asBlock(t, NODE, bt, "heartbeat", [{ G: "0", V: 0, D: 9, DA: "2" }]);
    const second = (await asUser<{ data: { last_active: number } }>(t, "GET", `/block/${NODE}`)).body.data.last_active;
    expect(second).toBe(base + 3_600_000);
  });

  it("TIMESTAMP dates a buffered reading; an older one does not replace last_data", async () => {
    const guid = `${NODE}_0_0_9`;
    const now = Date.now();
    await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 9, DA: "30" });
    await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 9, DA: "10", TIMESTAMP: now - 3_600_000 });
    const d = await device(guid);
    expect(d.last_data.DA).toBe(30);
    const points = await history(guid);
    expect(points.map((p) => p.v)).toEqual([10, 30]); // time order, the buffered one first
    expect(points[0]?.t).toBe(`${new Date(now - 3_600_000).toISOString().slice(0, 23)}+0000`);
  });

  it("a TIMESTAMP more than 5 minutes ahead is not trusted: the reading is dated on arrival", async () => {
    const guid = `${NODE}_0_0_9`;
    const before = Date.now();
    await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 9, DA: "5", TIMESTAMP: before + 3_600_000 });
    const ts = (await device(guid)).last_data.timestamp as number;
    expect(ts).toBeGreaterThanOrEqual(before);
    expect(ts).toBeLessThanOrEqual(Date.now());
  });

  it("KEY makes a reading idempotent per node: the same KEY twice stores one reading", async () => {
    const guid = `${NODE}_0_0_9`;
    const r1 = await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 9, DA: "1", KEY: "k-1" });
    const r2 = await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 9, DA: "1", KEY: "k-1" });
    expect([r1.body, r2.body]).toEqual([OK, OK]);
    await asBlock(t, NODE, bt, "heartbeat", [
      { G: "0", V: 0, D: 9, DA: "2", KEY: "k-2" },
      { G: "0", V: 0, D: 9, DA: "2", KEY: "k-2" },
      { G: "0", V: 0, D: 9, DA: "3", KEY: "k-1" },
    ]);
    expect((await history(guid)).map((p) => p.v)).toEqual([1, 2]);
    // Keys belong to a node: another node may use the same key.
    const other = freshNode("EVENTS");
    const bt2 = await t.activate(other);
    await asBlock(t, other, bt2, "data", { G: "0", V: 0, D: 9, DA: "7", KEY: "k-1" });
    expect((await history(`${other}_0_0_9`)).map((p) => p.v)).toEqual([7]);
  });
});
