/** The live stream at the protocol level: auth, frames, isolation, filter, caps, pings, slow consumers. */
import type { IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type StreamFrame, streamAddress } from "../../protocol/stream.js";
import { SESSION_COOKIE } from "../../server/services/accounts/sessions.js";
import { freshNode } from "../helpers/core.js";
import { http } from "../helpers/http.js";
import { type TestServer, startTestServer } from "../helpers/server.js";
import { type StreamClient, openStream } from "../helpers/stream-client.js";

let t: TestServer;
let authUrl: string;
const clients: StreamClient[] = [];

async function open(url: string, headers?: Record<string, string>, options?: Parameters<typeof openStream>[2]): Promise<StreamClient> {
  const c = await openStream(url, headers, options);
  clients.push(c);
  return c;
}

async function refused(url: string, headers?: Record<string, string>): Promise<{ status: number; body: string; headers: IncomingHttpHeaders }> {
  try {
    await open(url, headers);
  } catch (err) {
    return err as { status: number; body: string; headers: IncomingHttpHeaders };
  }
  throw new Error("the stream opened");
}

async function post(node: string, token: string, kind: "data" | "config" | "heartbeat", body: unknown): Promise<void> {
  const res = await http(`${t.baseUrl}/block/${node}/${kind}`, { method: "POST", json: body, headers: { "x-service-token": token } });
  expect(res.status).toBe(200);
}

/** A user with a token and a directly activated block. */
async function userWithBlock(prefix: string): Promise<{ token: string; node: string; block: string; userId: number }> {
  const node = freshNode(prefix);
  const token = await t.addUser(`u${node}`);
  const block = await t.activate(node, token);
  const userId = (await t.server.services.auth.user({ user_access_token: token })).userId;
  return { token, node, block, userId };
}

beforeAll(async () => {
  t = await startTestServer({ port: 0, streamPort: 0, stream: { maxPerUser: 3, pingMs: 100, maxBufferedBytes: 64 * 1024 } }, { listen: true });
  authUrl = (t.baseUrl as string).replace(/\/rest\/v0$/, "");
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await t.close();
});

describe("live stream: credentials", () => {
  it("refuses the upgrade with 401 without a credential or with an unknown one", async () => {
    const none = await refused(streamAddress(authUrl));
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body)).toMatchObject({ result: 0, id: 0, error: expect.stringMatching(/user_access_token/) });
    expect((await refused(streamAddress(authUrl, { userToken: "not-a-token" }))).status).toBe(401);
    expect((await refused(streamAddress(authUrl, { accessToken: "not-a-token" }))).status).toBe(401);
    expect((await refused(`${streamAddress(authUrl)}`, { cookie: `${SESSION_COOKIE}=forged.value` })).status).toBe(401);
  });

  it("answers a plain GET (no WebSocket handshake) with 404 and the envelope naming the handshake", async () => {
    const u = await userWithBlock("STREAMPLAIN");
    const plain = await http(`${t.baseUrl}/stream?user_access_token=${u.token}`);
    expect(plain.status).toBe(404);
    expect(plain.body).toMatchObject({ result: 0, id: 0, error: expect.stringMatching(/WebSocket/) });
  });

  it("accepts a user token, an OAuth token and the session cookie from the server's own origin only", async () => {
    const u = await userWithBlock("STREAMAUTH");
    const s = t.server.services;
    const oauth = await s.auth.issue(u.userId, "oauth", { clientId: "app" });
    const cookie = `${SESSION_COOKIE}=${await s.accounts.sessions.create(u.userId)}`;
    const byToken = await open(streamAddress(authUrl, { userToken: u.token }));
    const byOauth = await open(streamAddress(authUrl, { accessToken: oauth }));
    const byCookie = await open(streamAddress(authUrl), { cookie, origin: authUrl });
    const foreign = await refused(streamAddress(authUrl), { cookie, origin: "http://evil.example" });
    expect(foreign.status).toBe(403);
    await post(u.node, u.block, "data", { G: "0", V: 0, D: 9, DA: "21.5" });
    for (const c of [byToken, byOauth, byCookie]) {
      expect(await c.next((f) => f.type === "data", "a reading")).toMatchObject({ type: "data", guid: `${u.node}_0_0_9`, DA: 21.5 });
    }
  });

  it("caps the sockets of one user (429 with Retry-After before the upgrade) and answers a bad guid filter with 400", async () => {
    const u = await userWithBlock("STREAMCAP");
    const url = streamAddress(authUrl, { userToken: u.token });
    const open3 = await Promise.all([open(url), open(url), open(url)]);
    const over = await refused(url);
    expect(over.status).toBe(429);
    // Retry-After: one ping interval (100 ms here, so the 1 s floor), within which a vanished client's socket is closed.
    expect(over.headers["retry-after"]).toBe("1");
    await open3[0]?.close();
    await expect.poll(() => t.server.services.stream.sockets, { timeout: 2000 }).toBeLessThan(clientsOpen());
    await open(url);
    expect((await refused(`${url}&guid=${"x".repeat(300)}`)).status).toBe(400);
  });
});

/** Sockets the server still counts after a close are at most the ones this file left open. */
function clientsOpen(): number {
  return clients.filter((c) => c.ws.readyState === c.ws.OPEN).length + 1;
}

describe("live stream: frames", () => {
  it("sends data (fast lane and fastify path), config, device and block frames in order, after commit", async () => {
    const u = await userWithBlock("STREAMFRAMES");
    const c = await open(streamAddress(authUrl, { userToken: u.token }));
    const guid = `${u.node}_1_0_1002`;
    await post(u.node, u.block, "config", { G: "1", V: 0, D: 1002, type: "PLUGIN", ip: "10.0.0.7" });
    await post(u.node, u.block, "heartbeat", [{ G: "1", V: 0, D: 1002, DA: "1" }]);
    // A query string sends the event through fastify instead of the fast lane.
    const slow = await http(`${t.baseUrl}/block/${u.node}/data?x=1`, { method: "POST", json: { G: "1", V: 0, D: 1002, DA: "0" }, headers: { "x-service-token": u.block } });
    expect(slow.status).toBe(200);
    await c.next((f) => f.type === "data" && f.DA === 0, "the second reading");
    expect(t.server.api.fastIngest?.stats.taken).toBeGreaterThan(0);
    const mine = c.frames.filter((f) => "guid" in f && f.guid === guid);
    expect(mine.map((f) => f.type)).toEqual(["device", "config", "data", "data"]);
    expect(mine[0]).toEqual({ type: "device", guid, change: "created" });
    expect(mine[1]).toMatchObject({ type: "config", guid, config: { type: "PLUGIN", ip: "10.0.0.7" }, timestamp: expect.any(Number) });
    // A relay's DA is numeric: shown as a number, as in last_data.
    expect(mine[2]).toMatchObject({ type: "data", guid, DA: 1 });
    // Every data frame is about a reading that a client can already read back.
    const hb = await http<{ data: { last_data: { DA: unknown } } }>(`${t.baseUrl}/device/${guid}?user_access_token=${u.token}`);
    expect(hb.body.data.last_data.DA).toBe(0);

    const put = await http(`${t.baseUrl}/device/${guid}?user_access_token=${u.token}`, { method: "PUT", json: { shortName: "Lamp" } });
    expect(put.status).toBe(200);
    await c.next((f) => f.type === "device" && f.change === "updated", "the rename");
    expect((await http(`${t.baseUrl}/device/${guid}?user_access_token=${u.token}`, { method: "DELETE" })).status).toBe(200);
    expect(await c.next((f) => f.type === "device" && f.change === "deleted", "the deletion")).toEqual({ type: "device", guid, change: "deleted" });
    expect((await http(`${t.baseUrl}/block/${u.node}?user_access_token=${u.token}`, { method: "DELETE" })).status).toBe(200);
    expect(await c.next((f) => f.type === "block", "the unpairing")).toEqual({ type: "block", nodeId: u.node, change: "unpaired" });
  });

  it("shows an unclaimed block awaiting activation to a socket from its address, lists it, and says when it is claimed", async () => {
    const u = await userWithBlock("STREAMOWNER");
    const c = await open(streamAddress(authUrl, { userToken: u.token }));
    const node = freshNode("STREAMAWAIT");
    const held = fetch(`${t.baseUrl}/block/${node}/activate`);
    expect(await c.next((f) => f.type === "block" && f.nodeId === node, "awaiting")).toEqual({ type: "block", nodeId: node, change: "awaiting" });
    const list = await http<{ data: { nodeid: string }[] }>(`${t.baseUrl}/block/awaiting?user_access_token=${u.token}`);
    expect(list.body.data.map((a) => a.nodeid)).toContain(node);
    expect((await http(`${t.baseUrl}/block?user_access_token=${u.token}`, { method: "POST", json: { nodeid: node } })).status).toBe(200);
    expect(await c.next((f) => f.type === "block" && f.change === "claimed", "claimed")).toEqual({ type: "block", nodeId: node, change: "claimed" });
    expect((await held).status).toBe(200);
    const after = await http<{ data: { nodeid: string }[] }>(`${t.baseUrl}/block/awaiting?user_access_token=${u.token}`);
    expect(after.body.data.map((a) => a.nodeid)).not.toContain(node);
  });

  it("sends a rule frame after each run, once the run is in the rule's history", async () => {
    const u = await userWithBlock("STREAMRULE");
    const c = await open(streamAddress(authUrl, { userToken: u.token }));
    const sensor = `${u.node}_0_0_5`;
    await post(u.node, u.block, "data", { G: "0", V: 0, D: 5, DA: "0" });
    const rule = {
      shortName: "press",
      preconditions: [{ handler: "serviceChange", params: { guid: sensor, to: "1" } }],
      actions: [{ handler: "sleep", params: { guid: "N/A", sleepLength: 1 } }],
    };
    const made = await http<{ data: { rid: string } }>(`${t.baseUrl}/rule?user_access_token=${u.token}`, { method: "POST", json: rule });
    const rid = Number(made.body.data.rid);
    await post(u.node, u.block, "data", { G: "0", V: 0, D: 5, DA: "1" });
    const frame = await c.next((f) => f.type === "rule", "the run");
    expect(frame).toEqual({ type: "rule", rid, ok: true, timestamp: expect.any(Number) });
    const history = await http<{ data: { history: unknown[] } }>(`${t.baseUrl}/rule/${rid}?user_access_token=${u.token}`);
    expect(history.body.data.history).toHaveLength(1);
  });

  it("tells each user only about their own resources, and ?guid= narrows to the devices named", async () => {
    const a = await userWithBlock("STREAMISOA");
    const b = await userWithBlock("STREAMISOB");
    const ca = await open(streamAddress(authUrl, { userToken: a.token }));
    const cb = await open(streamAddress(authUrl, { userToken: b.token }));
    const only = await open(streamAddress(authUrl, { userToken: a.token, guids: [`${a.node}_0_0_9`] }));
    await post(b.node, b.block, "data", { G: "0", V: 0, D: 9, DA: "1" });
    await post(a.node, a.block, "data", { G: "0", V: 0, D: 31, DA: "2" });
    await post(a.node, a.block, "data", { G: "0", V: 0, D: 9, DA: "3" });
    await ca.next((f) => f.type === "data" && f.DA === 3, "a's last reading");
    await cb.next((f) => f.type === "data", "b's reading");
    await only.next((f) => f.type === "data" && f.DA === 3, "the filtered reading");
    const guids = (c: StreamClient) => new Set(c.frames.map((f: StreamFrame) => ("guid" in f ? f.guid : "")));
    expect([...guids(ca)].every((g) => g.startsWith(a.node))).toBe(true);
    expect([...guids(cb)].every((g) => g.startsWith(b.node))).toBe(true);
    expect(only.frames.filter((f) => f.type === "data")).toEqual([{ type: "data", guid: `${a.node}_0_0_9`, DA: 3, timestamp: expect.any(Number) }]);
    expect([...guids(only)]).toEqual([`${a.node}_0_0_9`]);
  });
});

describe("live stream: liveness and bounds", () => {
  it("pings every interval and closes a socket that does not answer", async () => {
    const u = await userWithBlock("STREAMPING");
    const url = streamAddress(authUrl, { userToken: u.token });
    const polite = await open(url);
    let pings = 0;
    polite.ws.on("ping", () => pings++);
    const mute = await open(url, {}, { autoPong: false });
    const closed = new Promise<number>((resolve) => mute.ws.once("close", (code) => resolve(code)));
    expect(await closed).toBe(1006);
    expect(pings).toBeGreaterThanOrEqual(2);
    expect(polite.ws.readyState).toBe(polite.ws.OPEN);
  });

  it("drops frames for a client that does not read, bounds what waits for it, and reports the count in a lag frame", async () => {
    // A server of its own: the paused client must not be closed for missing pings meanwhile.
    const own = await startTestServer({ port: 0, streamPort: 0, stream: { pingMs: 600_000, maxBufferedBytes: 64 * 1024 } }, { listen: true });
    try {
      const node = freshNode("STREAMSLOW");
      const token = await own.addUser(`u${node}`);
      const userId = (await own.server.services.auth.user({ user_access_token: token })).userId;
      const s = own.server.services;
      const url = streamAddress((own.baseUrl as string).replace(/\/rest\/v0$/, ""), { userToken: token });
      const slow = await open(url);
      const fast = await open(url);
      // The client stops reading: the kernel's buffers fill, then the server's.
      const raw = (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
      raw.pause();
      const big = "x".repeat(4000);
      const sent = 6000;
      // In turns of a few frames, so that the other socket's client (in this process) reads meanwhile.
      for (let i = 0; i < sent; i++) {
        s.events.publish(userId, [{ type: "data", guid: `${node}_0_0_9`, DA: `${i}:${big}`, timestamp: i }]);
        if (i % 8 === 7) await new Promise((resolve) => setImmediate(resolve));
      }
      const dropped = s.stream.stats.dropped;
      expect(dropped).toBeGreaterThan(0);
      // Never more than the bound plus one frame waits in the server for the slow socket.
      expect(s.stream.stats.maxBuffered).toBeGreaterThan(32 * 1024);
      expect(s.stream.stats.maxBuffered).toBeLessThanOrEqual(64 * 1024 + 4100);
      // The other socket of the same user kept up and got everything.
      await fast.next((f) => f.type === "data" && f.timestamp === sent - 1, "the fast socket's last frame", 20_000);
      expect(fast.frames.filter((f) => f.type === "data")).toHaveLength(sent);
      expect(fast.frames.some((f) => f.type === "lag")).toBe(false);
      raw.resume();
      const lagged = (): number => slow.frames.reduce((n, f) => n + (f.type === "lag" ? f.dropped : 0), 0);
      await slow.next(() => lagged() === dropped, "lag frames counting every dropped frame", 20_000);
      const received = slow.frames.filter((f) => f.type === "data").length;
      expect(received + dropped).toBe(sent);
      // Frames arrive in order, with the gap where they were dropped.
      const stamps = slow.frames.flatMap((f) => (f.type === "data" ? [f.timestamp] : []));
      expect(stamps).toEqual([...stamps].sort((x, y) => x - y));
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await own.close();
    }
  }, 40_000);
});
