import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LiveServer, startLive } from "../helpers/live.js";
import { TestBlock, call } from "./automation-helpers.js";

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64 * 1024, 7), Buffer.from([0xff, 0xd9])]);

describe("automation end to end: camera snapshot round trip", () => {
  let live: LiveServer;

  beforeAll(async () => {
    live = await startLive();
  });
  afterAll(async () => {
    await live.close();
  });

  it("a user's GET reaches the block as DA 1 and the block's upload comes back as the image", async () => {
    const block = new TestBlock(live, "E2ECAMERA001");
    await block.activate();
    await block.data(1004, "0");
    const cam = "E2ECAMERA001_0_0_1004";
    const snapshot = call("GET", `${live.streamUrl}/rest/v0/camera/${cam}/snapshot?user_access_token=${live.token}`);
    // The block: long-poll, see the snapshot command, upload the picture.
    const cmds = await block.commands();
    expect(cmds).toEqual([{ G: "0", V: 0, D: 1004, DA: "1", GUID: cam }]);
    const up = await call("POST", `${live.streamUrl}/rest/v0/camera/${cam}/snapshot`, {
      body: JPEG,
      headers: { "x-service-token": block.token, "content-type": "image/jpeg" },
    });
    expect(up.json()).toEqual({ result: 1, error: null, id: 0 });
    const res = await snapshot;
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("image/jpeg");
    expect(String(res.headers["cache-control"])).toContain("no-store");
    expect(res.body.equals(JPEG)).toBe(true);
  });
});
