import type { AddressInfo } from "node:net";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, startTestServer } from "../../helpers/server.js";
import { waitFor } from "../../helpers/wait.js";

const NODE = "CAMERA000001";
const OTHER_NODE = "CAMERA000002";
const CAM = `${NODE}_0_0_1004`;
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from("a tiny picture"), Buffer.from([0xff, 0xd9])]);

describe("camera snapshots", () => {
  let t: TestServer;
  let bt: string;
  let otherBt: string;
  const q = (): string => `user_access_token=${t.token}`;
  const get = (guid = CAM): Promise<LightMyRequestResponse> =>
    t.server.stream.inject({ method: "GET", url: `/rest/v0/camera/${guid}/snapshot?${q()}` });
  const upload = (token: string, body: Buffer = JPEG, type = "image/jpeg") =>
    t.server.stream.inject({ method: "POST", url: `/rest/v0/camera/${CAM}/snapshot`, headers: { "x-service-token": token, "content-type": type }, payload: body });
  /** Waits for the snapshot command (DA "1") on the camera's block queue and takes it. */
  const snapshotCommand = () =>
    waitFor("the snapshot command", async () => {
      const rows = await t.server.services.store.commands.pending(NODE, Date.now());
      await t.server.services.store.commands.remove(rows.map((r) => r.id));
      return rows.length > 0 ? rows : undefined;
    }, 3000);

  beforeAll(async () => {
    t = await startTestServer({ host: "127.0.0.1", port: 0, streamPort: 0, automation: { camera: { timeoutMs: 300 } } }, { listen: true });
    bt = await t.activate(NODE);
    otherBt = await t.activate(OTHER_NODE, await t.addUser("other"));
    await t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 1004, DA: "0" } });
  });
  afterAll(async () => {
    await t.close();
  });

  it("sends DA 1 to the camera and streams the block's upload to every waiting user", async () => {
    const first = get();
    const second = get();
    const cmds = await snapshotCommand();
    expect(cmds.map((c) => [c.guid, c.da])).toEqual([[CAM, "1"]]);
    const up = await upload(bt);
    expect(up.json()).toEqual({ result: 1, error: null, id: 0 });
    for (const res of await Promise.all([first, second])) {
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe("image/jpeg");
      expect(res.headers["cache-control"]).toContain("no-store");
      expect(res.rawPayload.equals(JPEG)).toBe(true);
    }
  });

  it("answers 504 with the envelope when no upload comes in time", async () => {
    const res = await get();
    expect(res.statusCode).toBe(504);
    expect(res.json()).toMatchObject({ result: 0, id: 0, error: expect.stringContaining("no snapshot from camera") });
    await snapshotCommand();
  });

  it("rejects uploads from a block that does not own the camera, without a token, or not JPEG", async () => {
    expect((await upload(otherBt)).statusCode).toBe(403);
    expect((await upload("not-a-token")).statusCode).toBe(401);
    const noToken = await t.server.stream.inject({ method: "POST", url: `/rest/v0/camera/${CAM}/snapshot`, headers: { "content-type": "image/jpeg" }, payload: JPEG });
    expect(noToken.statusCode).toBe(401);
    expect((await upload(bt, JPEG, "text/plain")).statusCode).toBe(415);
    const big = await upload(bt, Buffer.alloc(10 * 1024 * 1024 + 1));
    expect(big.statusCode).toBe(413);
    expect(big.json()).toMatchObject({ result: 0, error: "the snapshot is larger than 10 MiB" });
  });

  it("refuses a snapshot of a device that is not the user's camera", async () => {
    await t.api({ method: "POST", url: `/block/${NODE}/data`, headers: { "x-service-token": bt }, payload: { G: "0", V: 0, D: 9, DA: "20" } });
    expect((await get(`${NODE}_0_0_9`)).statusCode).toBe(400);
    const other = await t.server.stream.inject({ method: "GET", url: `/rest/v0/camera/${OTHER_NODE}_0_0_1004/snapshot?${q()}` });
    expect(other.statusCode).toBe(404);
    const anonymous = await t.server.stream.inject({ method: "GET", url: `/rest/v0/camera/${CAM}/snapshot` });
    expect(anonymous.statusCode).toBe(401);
  });

  it("has no HEAD: it would send the camera a snapshot command for an answer without its image", async () => {
    const port = (t.server.stream.server.address() as AddressInfo).port;
    const res = await fetch(`http://127.0.0.1:${port}/rest/v0/camera/${CAM}/snapshot?${q()}`, { method: "HEAD" });
    expect(res.status).toBe(404);
    // Nothing was sent to the camera: its block's queue is empty.
    expect(await t.server.services.store.commands.pending(NODE, Date.now())).toEqual([]);
  });
});
