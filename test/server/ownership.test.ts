/** Ownership: user B never sees or touches user A's blocks and devices; a block token acts only for its own node. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OK, asBlock, asUser, expectRefused } from "../helpers/core.js";
import { type TestServer, startTestServer } from "../helpers/server.js";

const NODE_A = "OWNERAAAA0001";
const NODE_B = "OWNERBBBB0001";
const RELAY_A = `${NODE_A}_0_0_1002`;
const TEMP_A = `${NODE_A}_0_0_9`;

describe("ownership", () => {
  let t: TestServer;
  let userB: string;
  let btA: string;
  let btB: string;

  beforeAll(async () => {
    t = await startTestServer({ pollHoldSeconds: 0.1 });
    userB = await t.addUser("bob");
    btA = await t.activate(NODE_A);
    btB = await t.activate(NODE_B, userB);
    await asBlock(t, NODE_A, btA, "heartbeat", [
      { G: "0", V: 0, D: 1002, DA: "0" },
      { G: "0", V: 0, D: 9, DA: "20" },
    ]);
    await asBlock(t, NODE_B, btB, "data", { G: "0", V: 0, D: 9, DA: "5" });
  });
  afterAll(async () => {
    await t.close();
  });

  const asB = (method: "GET" | "POST" | "PUT" | "DELETE", path: string, payload?: unknown) => asUser(t, method, path, payload, userB);

  it("B lists only B's devices and blocks", async () => {
    const devices = await asB("GET", "/devices");
    expect(Object.keys((devices.body as { data: object }).data)).toEqual([`${NODE_B}_0_0_9`]);
    const blocks = await asB("GET", "/block");
    expect(Object.keys((blocks.body as { data: object }).data)).toEqual([NODE_B]);
  });

  it("B cannot read, command, rename or delete A's devices: each is reported as unknown (404)", async () => {
    for (const [method, path, payload] of [
      ["GET", `/device/${RELAY_A}`, undefined],
      ["PUT", `/device/${RELAY_A}`, { DA: "1" }],
      ["PUT", `/device/${RELAY_A}`, { shortName: "mine" }],
      ["DELETE", `/device/${RELAY_A}`, undefined],
      ["GET", `/device/${TEMP_A}/heartbeat`, undefined],
      ["GET", `/device/${TEMP_A}/data?from=0`, undefined],
      ["POST", `/device/${TEMP_A}/callback`, { url: "http://127.0.0.1:9/x" }],
      ["PUT", `/device/${TEMP_A}/callback`, { url: "http://127.0.0.1:9/x" }],
      ["GET", `/device/${TEMP_A}/callback`, undefined],
      ["DELETE", `/device/${TEMP_A}/callback`, undefined],
    ] as const) {
      expectRefused(await asB(method, path, payload), 404, /unknown device/);
    }
    // A's devices are untouched, with no command queued and no callback set.
    const a = await asUser<{ data: { shortName: string } }>(t, "GET", `/device/${RELAY_A}`);
    expect(a.body.data.shortName).toBe("Relay");
    expect((await asBlock(t, NODE_A, btA, "commands")).body).toEqual({ DEVICE: [] });
    expectRefused(await asUser(t, "GET", `/device/${TEMP_A}/callback`), 404, /no callback/);
  });

  it("B cannot see, unpair or claim A's block", async () => {
    expectRefused(await asB("GET", `/block/${NODE_A}`), 404, NODE_A);
    expectRefused(await asB("DELETE", `/block/${NODE_A}`), 404, NODE_A);
    expectRefused(await asB("POST", "/block", { nodeid: NODE_A }), 409, NODE_A);
    expect((await asUser(t, "GET", `/block/${NODE_A}`)).status).toBe(200);
  });

  it("a block token acts only for its own node (403 on another node's path)", async () => {
    for (const kind of ["data", "config", "heartbeat", "commands"] as const) {
      const body = kind === "heartbeat" ? [{ G: "0", V: 0, D: 9, DA: "1" }] : kind === "config" ? { G: "0", V: 0, D: 9, type: "X" } : { G: "0", V: 0, D: 9, DA: "1" };
      expectRefused(await asBlock(t, NODE_B, btA, kind, kind === "commands" ? undefined : body), 403, NODE_B);
    }
    // Also for a node nobody owns yet: A's token cannot create devices there.
    expectRefused(await asBlock(t, "UNOWNED000001", btA, "data", { G: "0", V: 0, D: 9, DA: "1" }), 403);
    expect(Object.keys(((await asB("GET", "/devices")).body as { data: object }).data)).toEqual([`${NODE_B}_0_0_9`]);
    expect((await asBlock(t, NODE_A, btA, "data", { G: "0", V: 0, D: 9, DA: "1" })).body).toEqual(OK);
  });

  it("credentials of one kind do not work as another", async () => {
    expectRefused(await asBlock(t, NODE_A, t.token, "data", { G: "0", V: 0, D: 9, DA: "1" }), 401, /block token/);
    expectRefused(await asUser(t, "GET", "/devices", undefined, btA), 401, /user_access_token/);
    expectRefused(await asBlock(t, NODE_A, "", "data", { G: "0", V: 0, D: 9, DA: "1" }), 401, /X-Service-Token/);
    const res = await t.api({ method: "GET", url: "/devices" });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ result: 0, id: 0, error: expect.stringMatching(/user_access_token/) });
  });
});
