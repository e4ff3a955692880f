import { createHmac, timingSafeEqual } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Receiver, startReceiver } from "../server/automation/helpers.js";
import { type LiveServer, startLive } from "../helpers/live.js";
import { TestBlock, call } from "./automation-helpers.js";

describe("automation end to end: callbacks over real HTTP", () => {
  let live: LiveServer;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    live = await startLive();
  });
  afterAll(async () => {
    await live.close();
    await receiver.close();
  });

  it("POSTs a signed delivery to a local HTTP server within a second", async () => {
    const block = new TestBlock(live, "E2ECALLBACK1");
    await block.activate();
    await block.data(9, "18");
    const guid = "E2ECALLBACK1_0_0_9";
    const base = `${live.baseUrl}/device/${guid}/callback?user_access_token=${live.token}`;
    expect((await call("POST", base, { json: { url: `${receiver.url}/hook` } })).status).toBe(200);
    const { secret } = (await call("GET", base)).json<{ data: { url: string; secret: string } }>().data;
    const sent = Date.now();
    await block.data(9, "19.25");
    const got = await receiver.nth(1, 1000);
    expect(Date.now() - sent).toBeLessThan(1000);
    expect(JSON.parse(got.body.toString())).toMatchObject({ GUID: guid, G: "0", V: 0, D: 9, DA: 19.25, node: "E2ECALLBACK1" });
    // What a receiver does: HMAC-SHA256 of the raw body with the secret, compared in constant time.
    const mine = Buffer.from(`sha256=${createHmac("sha256", secret).update(got.body).digest("hex")}`);
    const theirs = Buffer.from(String(got.headers["x-blockkit-signature"]));
    expect(mine.length === theirs.length && timingSafeEqual(mine, theirs)).toBe(true);
    const forged = Buffer.from(`sha256=${createHmac("sha256", "wrong").update(got.body).digest("hex")}`);
    expect(timingSafeEqual(forged, theirs)).toBe(false);
  });
});
