/** Webhook actuator calls are signed like callbacks, with the secret given at creation. */
import { createHmac, timingSafeEqual } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DELIVERY_HEADER, SIGNATURE_HEADER } from "../../../protocol/automation.js";
import { type TestServer, startTestServer } from "../../helpers/server.js";
import { type Receiver, startReceiver } from "./helpers.js";

interface Env<T = unknown> {
  result: number;
  data: T;
}

describe("webhook actuator signing", () => {
  let t: TestServer;
  let receiver: Receiver;
  beforeEach(async () => {
    receiver = await startReceiver();
    t = await startTestServer();
  });
  afterEach(async () => {
    await t.close();
    await receiver.close();
  });

  it("sends X-Blockkit-Signature (HMAC-SHA256 of the body with the actuator's secret) and a delivery id per call", async () => {
    const q = `user_access_token=${t.token}`;
    const hooks = ((await t.server.api.inject({ method: "GET", url: `/auth/webhook?${q}` })).json() as Env<{ guid: string }>).data.guid;
    const created = (await t.api({ method: "POST", url: `/device/${hooks}/subdevice?${q}`, payload: { category: "webhook", type: "actuator", shortName: "Lamp", data: "lamp", url: `${receiver.url}/lamp` } })).json() as Env<{ id: string; secret: string }>;
    expect(created.data.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    for (let i = 0; i < 2; i++) expect((await t.api({ method: "PUT", url: `/device/${hooks}?${q}`, payload: { DA: "lamp" } })).statusCode).toBe(200);
    await receiver.nth(2);
    for (const got of receiver.received) {
      const expected = Buffer.from(`sha256=${createHmac("sha256", created.data.secret).update(got.body).digest("hex")}`);
      const header = Buffer.from(String(got.headers[SIGNATURE_HEADER]));
      expect(header.length === expected.length && timingSafeEqual(header, expected)).toBe(true);
      expect(got.headers[DELIVERY_HEADER]).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(receiver.received[0]?.headers[DELIVERY_HEADER]).not.toBe(receiver.received[1]?.headers[DELIVERY_HEADER]);
  });
});
