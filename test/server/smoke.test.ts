import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type TestServer, startTestServer } from "../helpers/server.js";

describe("server smoke", () => {
  let t: TestServer;
  beforeEach(async () => {
    t = await startTestServer();
  });
  afterEach(async () => {
    await t.close();
  });

  it("creates a device from a data event and lists it", async () => {
    const node = "SMOKE0000001";
    const bt = await t.activate(node);
    const post = await t.api({ method: "POST", url: `/block/${node}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 9, DA: "21.5" } });
    expect(post.json()).toEqual({ result: 1, error: null, id: 0 });
    const list = await t.api({ method: "GET", url: `/devices?user_access_token=${t.token}` });
    const body = list.json() as { data: Record<string, { device_type: string; last_data: { DA: unknown } }> };
    expect(body.data[`${node}_0_0_9`]?.device_type).toBe("temperature");
    expect(body.data[`${node}_0_0_9`]?.last_data.DA).toBe(21.5);
  });
});

describe("service devices", () => {
  let t: TestServer;
  beforeEach(async () => {
    t = await startTestServer();
  });
  afterEach(async () => {
    await t.close();
  });

  it("GET /auth/webhook adds the Webhooks device once", async () => {
    const first = await t.server.api.inject({ method: "GET", url: `/auth/webhook?user_access_token=${t.token}` });
    expect(first.statusCode).toBe(200);
    const guid = (first.json() as { data: { guid: string } }).data.guid;
    expect(guid).toMatch(/^SVC\d{9}_0_0_108$/);
    const again = await t.server.api.inject({ method: "GET", url: `/auth/webhook?user_access_token=${t.token}` });
    expect((again.json() as { data: { guid: string } }).data.guid).toBe(guid);
    const dev = await t.api({ method: "GET", url: `/device/${guid}?user_access_token=${t.token}` });
    expect((dev.json() as { data: { device_type: string } }).data.device_type).toBe("webhook");
  });
});

describe("history of code-valued devices", () => {
  let t: TestServer;
  beforeEach(async () => {
    t = await startTestServer();
  });
  afterEach(async () => {
    await t.close();
  });

  it("keeps an RF bit string as text, leading zeros included, while a temperature folds as a number", async () => {
    const node = "RFCODE000001";
    const bt = await t.activate(node);
    for (const [D, DA] of [[11, "010101010101"], [9, "21.5"]] as const) {
      const res = await t.api({ method: "POST", url: `/block/${node}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D, DA } });
      expect(res.statusCode).toBe(200);
    }
    const rf = await t.api({ method: "GET", url: `/device/${node}_0_0_11/data?from=0&user_access_token=${t.token}` });
    expect((rf.json() as { data: { v: unknown }[] }).data.map((p) => p.v)).toEqual(["010101010101"]);
    const folded = await t.api({ method: "GET", url: `/device/${node}_0_0_11/data?from=0&interval=1day&fn=mean&user_access_token=${t.token}` });
    expect((folded.json() as { data: unknown[] }).data).toEqual([]);
    const temp = await t.api({ method: "GET", url: `/device/${node}_0_0_9/data?from=0&interval=1day&fn=mean&user_access_token=${t.token}` });
    expect((temp.json() as { data: { v: unknown }[] }).data.map((p) => p.v)).toEqual([21.5]);
  });
});
