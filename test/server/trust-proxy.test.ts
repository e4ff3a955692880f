/**
 * ServerOptions.trustProxy (`blockkit server --trust-proxy`) over real HTTP on loopback. The test's
 * connections come from 127.0.0.1, so a request with X-Forwarded-For is a request through a proxy
 * on this machine, as nginx (`$proxy_add_x_forwarded_for`, which appends) or Caddy send it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamAddress } from "../../protocol/stream.js";
import { BlockkitServer } from "../../server/controller.js";
import { isLoopbackAddress, trustedProxies, trustsLoopback } from "../../server/services/networks.js";
import { freshNode } from "../helpers/core.js";
import { http } from "../helpers/http.js";
import { type TestServer, startTestServer } from "../helpers/server.js";
import { openStream } from "../helpers/stream-client.js";
import { findForm } from "./accounts/page-client.js";

const now = Date.UTC(2026, 0, 1);
/** Three login attempts per client address, no refill while the clock stands still. */
const loginLimit = { burst: 10, refillSeconds: 30, addressBurst: 3 };

let trusting: TestServer;
let plain: TestServer;
/** Trusts loopback and has a metrics token: the way to scrape from this machine then. */
let tokened: TestServer;
const METRICS_TOKEN = "metrics-token-0123456789";

beforeAll(async () => {
  const common = { clock: () => now, loginLimit, pollHoldSeconds: 0.2 };
  [trusting, plain, tokened] = await Promise.all([
    startTestServer({ ...common, trustProxy: ["127.0.0.1", "::1"] }, { listen: true }),
    startTestServer(common, { listen: true }),
    startTestServer({ ...common, trustProxy: ["127.0.0.1"], metricsToken: METRICS_TOKEN }, { listen: true }),
  ]);
});

afterAll(async () => {
  await Promise.all([trusting?.close(), plain?.close(), tokened?.close()]);
});

const origin = (t: TestServer): string => new URL(t.baseUrl as string).origin;
const via = (forwarded: string): Record<string, string> => ({ "x-forwarded-for": forwarded });

/** A failed login (unknown user `name`) from behind the proxy, as client `forwarded`: its status. */
async function login(t: TestServer, forwarded: string, name: string): Promise<number> {
  const page = await fetch(`${origin(t)}/auth/login`);
  const cookie = page.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
  const { fields } = findForm(await page.text(), "/auth/login");
  const res = await fetch(`${origin(t)}/auth/login`, {
    method: "POST",
    redirect: "manual",
    headers: { ...via(forwarded), cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...fields, username: name, password: "wrong-password" }).toString(),
  });
  await res.arrayBuffer();
  return res.status;
}

describe("login attempts behind a proxy", () => {
  it("with the proxy trusted, each forwarded client has its own address limit", async () => {
    for (let i = 0; i < 3; i++) expect(await login(trusting, "198.51.100.1", `ann${i}`)).toBe(401);
    expect(await login(trusting, "198.51.100.1", "ann9")).toBe(429);
    // Another client through the same proxy is not kept out by the first one's guessing.
    expect(await login(trusting, "198.51.100.2", "bob0")).toBe(401);
  });

  it("without it, X-Forwarded-For is ignored: every client draws on the proxy's one limit", async () => {
    for (let i = 0; i < 3; i++) expect(await login(plain, "198.51.100.1", `ann${i}`)).toBe(401);
    expect(await login(plain, "198.51.100.2", "bob0")).toBe(429);
  });
});

describe("GET /metrics behind a proxy, without a metrics token", () => {
  const scrape = async (t: TestServer, headers: Record<string, string> = {}): Promise<number> => {
    const res = await fetch(`${origin(t)}/metrics`, { headers });
    await res.arrayBuffer();
    return res.status;
  };

  it("refuses a remote client, also one that wrote 127.0.0.1 into X-Forwarded-For itself", async () => {
    expect(await scrape(trusting, via("203.0.113.5"))).toBe(403);
    // nginx appends the client's address to what the client sent: the rightmost untrusted one counts.
    expect(await scrape(trusting, via("127.0.0.1, 203.0.113.5"))).toBe(403);
    // The machine itself through the proxy still scrapes.
    expect(await scrape(trusting, via("127.0.0.1"))).toBe(200);
    // A forwarded address is text a client wrote: one that only looks like loopback is not.
    expect(await scrape(trusting, via("127.evil"))).toBe(403);
  });

  it("refuses a request from the trusted proxy's address that forwards no client: it may carry anyone", async () => {
    // A proxy on loopback that sets no X-Forwarded-For sends exactly this for every outside client.
    for (const headers of [{}, via(""), via(" , ")]) {
      const res = await fetch(`${origin(trusting)}/metrics`, { headers });
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(await res.json()).toEqual({
        result: 0,
        id: 0,
        error: expect.stringMatching(/^metrics are served to loopback clients only, and this request came from a trusted proxy's address \(--trust-proxy\) without X-Forwarded-For/),
      });
    }
  });

  it("with a metrics token, serves whoever carries it, a request without X-Forwarded-For too", async () => {
    expect(await scrape(tokened, { authorization: `Bearer ${METRICS_TOKEN}` })).toBe(200);
    expect(await scrape(tokened)).toBe(401);
  });

  it("without a trusted proxy, answers loopback whatever it forwards (as before the option)", async () => {
    expect(await scrape(plain, via("203.0.113.5"))).toBe(200);
  });
});

describe("blocks awaiting activation behind a proxy", () => {
  it("are listed and streamed only to users whose forwarded address is the block's", async () => {
    const [home, away] = await Promise.all([trusting.addUser("homeuser"), trusting.addUser("awayuser")]);
    const auth = origin(trusting);
    const [homeStream, awayStream] = await Promise.all([
      openStream(streamAddress(auth, { userToken: home }), via("192.0.2.10")),
      openStream(streamAddress(auth, { userToken: away }), via("192.0.2.99")),
    ]);
    try {
      const node = freshNode("PROXYHOME");
      // The block asks through the proxy from the home network; unclaimed, its hold ends in 204.
      expect((await fetch(`${trusting.baseUrl}/block/${node}/activate`, { headers: via("192.0.2.10") })).status).toBe(204);
      const awaiting = async (token: string, forwarded: string): Promise<string[]> =>
        (await http<{ data: { nodeid: string }[] }>(`${trusting.baseUrl}/block/awaiting?user_access_token=${token}`, { headers: via(forwarded) })).body.data.map(
          (a) => a.nodeid,
        );
      expect(await awaiting(home, "192.0.2.10")).toContain(node);
      expect(await awaiting(away, "192.0.2.99")).not.toContain(node);
      await homeStream.next((f) => f.type === "block" && f.nodeId === node, "the home block awaiting");
      // A block from the away network, announced after the first: once the away socket has it, it
      // would have had the first one before, had it been sent to it.
      const other = freshNode("PROXYAWAY");
      expect((await fetch(`${trusting.baseUrl}/block/${other}/activate`, { headers: via("192.0.2.99") })).status).toBe(204);
      await awayStream.next((f) => f.type === "block" && f.nodeId === other, "the away block awaiting");
      expect(awayStream.frames.filter((f) => f.type === "block" && f.nodeId === node)).toEqual([]);
      expect(await awaiting(away, "192.0.2.99")).toEqual([other]);
    } finally {
      await Promise.all([homeStream.close(), awayStream.close()]);
    }
  });
});

describe("blocks awaiting activation through a proxy that forwards no client", () => {
  it("are listed and streamed to nobody by address: neither end's address is known", async () => {
    const user = await trusting.addUser("unforwarded");
    const stream = await openStream(streamAddress(origin(trusting), { userToken: user }));
    try {
      const node = freshNode("NOXFF");
      // Block and user both reach the server from the proxy's address, neither with X-Forwarded-For.
      expect((await fetch(`${trusting.baseUrl}/block/${node}/activate`)).status).toBe(204);
      const listed = await http<{ data: { nodeid: string }[] }>(`${trusting.baseUrl}/block/awaiting?user_access_token=${user}`);
      expect(listed.body.data.map((a) => a.nodeid)).not.toContain(node);
      // A later block with a known address reaches a socket with that address; this one got neither.
      const marker = freshNode("NOXFFMARK");
      const known = await openStream(streamAddress(origin(trusting), { userToken: user }), via("192.0.2.77"));
      try {
        expect((await fetch(`${trusting.baseUrl}/block/${marker}/activate`, { headers: via("192.0.2.77") })).status).toBe(204);
        await known.next((f) => f.type === "block" && f.nodeId === marker, "the forwarded block awaiting");
        expect(known.frames.filter((f) => f.type === "block" && f.nodeId === node)).toEqual([]);
        expect(stream.frames.filter((f) => f.type === "block")).toEqual([]);
      } finally {
        await known.close();
      }
    } finally {
      await stream.close();
    }
  });

  it("are still listed to the owner asking again, whatever the address", async () => {
    const node = freshNode("NOXFFOWN");
    await trusting.activate(node);
    expect((await fetch(`${trusting.baseUrl}/block/${node}/activate`)).status).toBe(204);
    const listed = await http<{ data: { nodeid: string }[] }>(`${trusting.baseUrl}/block/awaiting?user_access_token=${trusting.token}`);
    expect(listed.body.data.map((a) => a.nodeid)).toContain(node);
  });
});

describe("cookies behind a TLS proxy", () => {
  const preSession = async (t: TestServer): Promise<string> => {
    const page = await fetch(`${origin(t)}/auth/login`, { headers: { "x-forwarded-proto": "https" } });
    await page.arrayBuffer();
    return page.headers.getSetCookie().join("\n");
  };

  it("are marked Secure when the trusted proxy says the client came over https, and only then", async () => {
    expect(await preSession(trusting)).toMatch(/; Secure/i);
    expect(await preSession(plain)).not.toMatch(/; Secure/i);
  });
});

describe("the trusted proxies option", () => {
  it("takes addresses and networks, and refuses anything else naming the item", () => {
    expect(trustedProxies("127.0.0.1, ::1")).toEqual(["127.0.0.1", "::1"]);
    expect(trustedProxies("10.0.0.0/8,fd00::/8")).toEqual(["10.0.0.0/8", "fd00::/8"]);
    expect(() => trustedProxies("127.0.0.1,10.0.0.0/33")).toThrow(/^"10\.0\.0\.0\/33" is not a proxy's address or network/);
    expect(() => trustedProxies("1")).toThrow(/^"1" is not a proxy's address or network/);
    expect(() => trustedProxies("loopback")).toThrow(/^"loopback" is not/);
    expect(() => trustedProxies(" , ")).toThrow("give the proxies' addresses or networks");
    for (const every of ["true", "*", "0.0.0.0/0", "::/0"]) {
      expect(() => trustedProxies(every), every).toThrow(/trusting every hop lets any client choose its own address/);
    }
  });

  it("is checked when the server is made, naming the option", () => {
    expect(() => new BlockkitServer({ trustProxy: ["*"] })).toThrow(/^trustProxy: "\*" is refused: trusting every hop/);
    expect(() => new BlockkitServer({ trustProxy: ["127.0.0.1", "proxy.lan"] })).toThrow(/^trustProxy: "proxy\.lan" is not a proxy's address/);
  });

  it("tells when it trusts an address of the machine itself", () => {
    for (const l of [["127.0.0.1"], ["::1"], ["10.0.0.0/8", "127.0.0.0/8"], ["127.5.0.0/16"], ["0.0.0.0/1"], ["::ffff:127.0.0.1"]]) expect(trustsLoopback(l), l.join()).toBe(true);
    for (const l of [[], ["10.0.0.0/8"], ["::2"], ["128.0.0.0/1"], ["fd00::/8"]]) expect(trustsLoopback(l), l.join()).toBe(false);
  });

  it("counts only real loopback addresses as the machine itself", () => {
    for (const a of ["127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1"]) expect(isLoopbackAddress(a), a).toBe(true);
    // A forwarded address is text: a prefix that looks like loopback is not.
    for (const a of ["127.evil", "127.0.0.1.example", "::2", "203.0.113.5", "", "::ffff:10.0.0.1"]) expect(isLoopbackAddress(a), a).toBe(false);
  });
});
