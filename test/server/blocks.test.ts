/** /block: activation (two-legged, direct, timeout), claim rules, token rotation, list/get/unpair. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { OK, asBlock, asUser, expectRefused, freshNode } from "../helpers/core.js";
import { waitFor } from "../helpers/wait.js";
import { type TestServer, startTestServer } from "../helpers/server.js";


// One server per describe; each test has its own node and its own user.
let t: TestServer;
let NODE: string;
let user: string;
const asMe = (method: "GET" | "POST" | "PUT" | "DELETE", path: string, payload?: unknown) => asUser(t, method, path, payload, user);

beforeEach(async () => {
  NODE = freshNode("BLOCKTEST");
  user = await t.addUser(`u${NODE}`);
});

describe("block activation", () => {
  beforeAll(async () => {
    t = await startTestServer({ host: "127.0.0.1", port: 0, streamPort: 0, pollHoldSeconds: 0.3 }, { listen: true });
  });
  afterAll(async () => {
    await t.close();
  });

  const activate = () => t.api({ method: "GET", url: `/block/${NODE}/activate` });

  it("answers the token, or the end of a hold, with Cache-Control: no-store (a GET without credential, over real HTTP)", async () => {
    const direct = await fetch(`${t.baseUrl}/block/${NODE}/activate?user_access_token=${user}`);
    expect(direct.status).toBe(200);
    expect(direct.headers.get("cache-control")).toBe("no-store");
    const other = freshNode("BLOCKTEST");
    const unclaimed = await fetch(`${t.baseUrl}/block/${other}/activate`);
    expect(unclaimed.status).toBe(204);
    expect(unclaimed.headers.get("cache-control")).toBe("no-store");
  });

  it("two-legged: the held request receives {token} once the user claims the block", async () => {
    const held = activate();
    await waitFor("the claim", async () => (await asMe("POST", "/block", { nodeid: NODE })).status !== 404, 2000);
    const res = await held;
    expect(res.statusCode).toBe(200);
    const body = res.json() as { token: string };
    expect(Object.keys(body)).toEqual(["token"]);
    expect((await asBlock(t, NODE, body.token, "data", { G: "0", V: 0, D: 9, DA: "20" })).body).toEqual(OK);
    const blocks = await asUser<{ data: Record<string, unknown> }>(t, "GET", "/block", undefined, user);
    expect(Object.keys(blocks.body.data)).toEqual([NODE]);
  });

  it("a hold that ends unclaimed answers 204 with no body; a claim within 60 s is delivered on the next request", async () => {
    const started = Date.now();
    const res = await activate();
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe("");
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    // Still awaiting activation after the hold: the claim succeeds and the next request gets the token at once.
    expect((await asMe("POST", "/block", { nodeid: NODE })).body).toEqual(OK);
    const next = await activate();
    expect(next.statusCode).toBe(200);
    const token = (next.json() as { token: string }).token;
    expect((await asBlock(t, NODE, token, "data", { G: "0", V: 0, D: 9, DA: "20" })).status).toBe(200);
  });

  it("claiming a block that is not awaiting activation is 404", async () => {
    expectRefused(await asMe("POST", "/block", { nodeid: NODE }), 404, NODE, /not awaiting activation/);
  });

  it("claiming a block owned by someone else is 409, in both flows", async () => {
    await t.activate(NODE, user);
    const other = await t.addUser(`o${NODE}`);
    expectRefused(await asUser(t, "POST", "/block", { nodeid: NODE }, other), 409, NODE);
    const direct = await t.api({ method: "GET", url: `/block/${NODE}/activate?user_access_token=${other}` });
    expect(direct.statusCode).toBe(409);
    expect(direct.json()).toMatchObject({ result: 0, id: 0 });
    // The owner still has it.
    expect((await asMe("GET", `/block/${NODE}`)).status).toBe(200);
  });

  it("direct flow: a user token in the query claims and answers at once; a new token revokes the old", async () => {
    const first = await t.activate(NODE, user);
    expect((await asBlock(t, NODE, first, "data", { G: "0", V: 0, D: 9, DA: "1" })).status).toBe(200);
    const second = await t.activate(NODE, user);
    expect(second).not.toBe(first);
    expectRefused(await asBlock(t, NODE, first, "data", { G: "0", V: 0, D: 9, DA: "2" }), 401, /unknown or revoked block token/);
    expect((await asBlock(t, NODE, second, "data", { G: "0", V: 0, D: 9, DA: "3" })).status).toBe(200);
  });

  it("a HEAD on the activation path neither issues nor revokes a token", async () => {
    const token = await t.activate(NODE, user);
    const head = await t.api({ method: "HEAD", url: `/block/${NODE}/activate?user_access_token=${user}` });
    expect(head.statusCode).toBe(404);
    expect((await asBlock(t, NODE, token, "data", { G: "0", V: 0, D: 9, DA: "1" })).body).toEqual(OK);
  });

  it("concurrent activation requests of one node all receive the same token", async () => {
    const a = activate();
    const b = activate();
    await waitFor("the claim", async () => (await asMe("POST", "/block", { nodeid: NODE })).status !== 404, 2000);
    const [ra, rb] = await Promise.all([a, b]);
    expect(ra.statusCode).toBe(200);
    expect(rb.statusCode).toBe(200);
    const token = (ra.json() as { token: string }).token;
    expect((rb.json() as { token: string }).token).toBe(token);
    expect((await asBlock(t, NODE, token, "data", { G: "0", V: 0, D: 9, DA: "1" })).body).toEqual(OK);
  });

  it("direct flow with a bad user token is 401", async () => {
    const res = await t.api({ method: "GET", url: `/block/${NODE}/activate?user_access_token=nope` });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ result: 0, error: "unknown or revoked user_access_token", id: 0 });
  });
});

describe("block list, get, unpair", () => {
  beforeAll(async () => {
    t = await startTestServer({ pollHoldSeconds: 0.2 });
  });
  afterAll(async () => {
    await t.close();
  });

  it("lists blocks keyed by node id and gets one", async () => {
    const before = Date.now();
    await t.activate(NODE, user);
    const second = freshNode("BLOCKTEST");
    await t.activate(second, user);
    const list = await asUser<{ data: Record<string, { date_created: number; last_active: number; short_name: string }> }>(t, "GET", "/block", undefined, user);
    expect(Object.keys(list.body.data).sort()).toEqual([NODE, second].sort());
    const one = await asUser<{ data: Record<string, unknown> }>(t, "GET", `/block/${NODE}`, undefined, user);
    expect(one.body.data).toEqual(list.body.data[NODE]);
    expect(one.body.data).toEqual({ date_created: expect.any(Number), last_active: expect.any(Number), short_name: expect.any(String) });
    expect(one.body.data.date_created as number).toBeGreaterThanOrEqual(before);
    expectRefused(await asMe("GET", "/block/BLOCKTEST9999"), 404, "BLOCKTEST9999");
  });

  it("unpairing removes the block, its token, its devices and their history; the node can be claimed again", async () => {
    const bt = await t.activate(NODE, user);
    await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 9, DA: "20" });
    await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 1002, DA: "0" });
    await asMe("PUT", `/device/${NODE}_0_0_1002`, { DA: "1" });
    expect(Object.keys((await asUser<{ data: object }>(t, "GET", "/devices", undefined, user)).body.data)).toHaveLength(2);

    expect((await asMe("DELETE", `/block/${NODE}`)).body).toEqual(OK);
    expectRefused(await asMe("GET", `/block/${NODE}`), 404);
    expect((await asMe("GET", "/devices")).body).toEqual({ ...OK, data: {} });
    expectRefused(await asMe("GET", `/device/${NODE}_0_0_9/data?from=0`), 404);
    expectRefused(await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 9, DA: "21" }), 401);
    expectRefused(await asMe("DELETE", `/block/${NODE}`), 404);

    // Anyone may claim it now; it starts empty (no old history, no old commands).
    const other = await t.addUser(`o${NODE}`);
    const bt2 = await t.activate(NODE, other);
    expect((await asBlock(t, NODE, bt2, "data", { G: "0", V: 0, D: 9, DA: "22" })).status).toBe(200);
    const hist = await asUser<{ data: { v: number }[] }>(t, "GET", `/device/${NODE}_0_0_9/data?from=0`, undefined, other);
    expect(hist.body.data.map((p) => p.v)).toEqual([22]);
    const poll = await asBlock<{ DEVICE: unknown[] }>(t, NODE, bt2, "commands");
    expect(poll.body).toEqual({ DEVICE: [] });
  });
});
