/** Webhook actuator calls are signed like callbacks, with the secret given at creation. */
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
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

describe("webhook actuator errors", () => {
  it("say the same for a closed port, a silent one and an HTTP error (no port oracle)", async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const refusing = await startReceiver();
    refusing.status = 404;
    const t = await startTestServer({ automation: { outgoingTimeoutMs: 300 } });
    try {
      const q = `user_access_token=${t.token}`;
      const hooks = ((await t.server.api.inject({ method: "GET", url: `/auth/webhook?${q}` })).json() as Env<{ guid: string }>).data.guid;
      const texts: string[] = [];
      for (const [name, url] of [["a", `http://127.0.0.1:${closedPort}/x`], ["b", `http://127.0.0.1:${(silent.address() as AddressInfo).port}/x`], ["c", `${refusing.url}/x`]] as const) {
        const sid = ((await t.api({ method: "POST", url: `/device/${hooks}/subdevice?${q}`, payload: { category: "webhook", type: "actuator", shortName: name, data: name, url } })).json() as Env<{ id: string }>).data.id;
        const res = await t.api({ method: "PUT", url: `/device/${hooks}?${q}`, payload: { DA: name } });
        expect(res.statusCode).toBe(503);
        texts.push((res.json() as { error: string }).error.replace(sid, "SID"));
      }
      expect(new Set(texts).size).toBe(1);
      expect(texts[0]).toBe("webhook actuator SID: the call failed (no 2xx answer within 300 ms)");
    } finally {
      await t.close();
      silent.closeAllConnections();
      await new Promise<void>((r) => silent.close(() => r()));
      await refusing.close();
    }
  });
});
