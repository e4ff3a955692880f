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
