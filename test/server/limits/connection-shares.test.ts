/**
 * Shares of the connection cap, on real sockets: one user's credentials and one block's token hold
 * at most their share of connections (past it: 429 with the envelope, connection closed, nothing
 * held evicted); a block waiting for activation is not evicted at the total cap; and the machine's
 * own scrape of /metrics is answered when every connection is proven (the metrics reserve), and a
 * scrape's connection is not the one reset to make room at the cap.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { type Peer, closeAll, peer, server, slowBody } from "./raw-peers.js";

afterEach(closeAll);

const ok = /^HTTP\/1\.1 200 /;
const get = (path: string, headers = ""): string => `GET ${path} HTTP/1.1\r\nHost: x\r\n${headers}\r\n`;

describe("connection shares", () => {
  it("one user's credentials hold at most maxConnectionsPerUser connections; others still get in", async () => {
    const { t, port } = await server({ maxConnections: 8, maxConnectionsPerUser: 3 });
    const limits = t.server.services.limits;
    const devices = (token: string) => get(`/rest/v0/devices?user_access_token=${token}`);
    const mine: Peer[] = [];
    for (let i = 0; i < 3; i++) mine.push(await peer(port, devices(t.token), `127.0.1.${i + 1}`));
    await vi.waitFor(() => expect(mine.every((p) => ok.test(p.text()))).toBe(true), { timeout: 2000 });
    // From yet another address: answered 429 with the envelope, and closed (Connection: close).
    const fourth = await peer(port, devices(t.token), "127.0.1.4");
    await fourth.closed;
    expect(fourth.text()).toMatch(/^HTTP\/1\.1 429 [\s\S]*[Cc]onnection: close[\s\S]*"result":0[\s\S]*too many connections/);
    // When a place is likely free again (Retry-After, whole seconds). Before: no Retry-After.
    expect(fourth.text()).toMatch(/\r\n[Rr]etry-[Aa]fter: 5\r\n/);
    expect(limits.hits.get("connections_per_user")).toBe(1);
    expect(limits.userConnections(1)).toBe(3);
    // The user's own connections are kept and still serve requests.
    expect(mine.some((p) => p.isClosed())).toBe(false);
    mine[0]?.socket.write(devices(t.token));
    await vi.waitFor(() => expect(mine[0]?.text().match(/HTTP\/1\.1 200 /g)).toHaveLength(2), { timeout: 2000 });
    // Another user is not held back by the first one's share.
    const other = await peer(port, devices(await t.addUser("other")), "127.0.1.4");
    await vi.waitFor(() => expect(other.text()).toMatch(ok), { timeout: 2000 });
    // A connection the user closes gives the place back.
    mine[1]?.socket.destroy();
    await vi.waitFor(() => expect(limits.userConnections(1)).toBe(2), { timeout: 2000 });
    const again = await peer(port, devices(t.token), "127.0.1.5");
    await vi.waitFor(() => expect(again.text()).toMatch(ok), { timeout: 2000 });
  });

  it("one block holds at most maxConnectionsPerBlock; its held polls are kept, other blocks of its owner are not held back", async () => {
    const { t, port } = await server({ maxConnections: 16, maxConnectionsPerBlock: 2 });
    const limits = t.server.services.limits;
    const node = "SHAREBLOCK001";
    const token = await t.activate(node);
    const poll = (n: string, tk: string) => get(`/rest/v0/block/${n}/commands`, `X-Service-Token: ${tk}\r\n`);
    const body = JSON.stringify({ G: "0", V: 0, D: 9, DA: "1" });
    const event = `POST /rest/v0/block/${node}/data HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Service-Token: ${token}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    // The block's share: its held poll and a kept-alive connection for its readings.
    const held = await peer(port, poll(node, token), "127.0.1.1");
    const readings = await peer(port, event, "127.0.1.2");
    await vi.waitFor(() => expect(readings.text()).toMatch(ok), { timeout: 2000 });
    expect(t.server.services.commands.heldPolls).toBe(1);
    // A poll on a third connection: 429 with the envelope, closed. Before: it was held, and the
    // held one answered empty in its place.
    const third = await peer(port, poll(node, token), "127.0.1.3");
    await third.closed;
    expect(third.text()).toMatch(/^HTTP\/1\.1 429 [\s\S]*"result":0[\s\S]*too many connections: block SHAREBLOCK001/);
    expect(third.text()).toMatch(/\r\n[Rr]etry-[Aa]fter: 5\r\n/);
    // A reading on a third connection: refused too, counted once although the fast lane saw it first.
    const reading = await peer(port, event, "127.0.1.3");
    await reading.closed;
    expect(reading.text()).toMatch(/^HTTP\/1\.1 429 [\s\S]*\r\n[Rr]etry-[Aa]fter: 5\r\n/);
    expect(limits.hits.get("connections_per_block")).toBe(2);
    // The held poll was not touched, and the kept-alive connection still carries readings.
    expect(held.isClosed() || held.text() !== "").toBe(false);
    expect(t.server.services.commands.heldPolls).toBe(1);
    readings.socket.write(event);
    await vi.waitFor(() => expect(readings.text().match(/HTTP\/1\.1 200 /g)).toHaveLength(2), { timeout: 2000 });
    // The owner's other block holds its own poll.
    const other = await t.activate("SHAREBLOCK002");
    await peer(port, poll("SHAREBLOCK002", other), "127.0.1.3");
    await vi.waitFor(() => expect(t.server.services.commands.heldPolls).toBe(2), { timeout: 2000 });
  });

  it("at the total cap, a block waiting for activation is not evicted; an unauthenticated connection is", async () => {
    const { t, port } = await server({ maxConnections: 3 });
    const limits = t.server.services.limits;
    const node = "SHAREWAIT0001";
    const waiting = await peer(port, get(`/rest/v0/block/${node}/activate`), "127.0.1.1");
    await vi.waitFor(() => expect(t.server.services.activation.heldCount).toBe(1), { timeout: 2000 });
    const attackers = [await peer(port, slowBody("/auth/login"), "127.0.1.2"), await peer(port, slowBody("/auth/login"), "127.0.1.3")];
    await vi.waitFor(() => expect(limits.openConnections).toBe(3), { timeout: 2000 });
    // Before: the waiting block was the oldest unproven connection, and the one reset.
    const user = await peer(port, get(`/rest/v0/devices?user_access_token=${t.token}`), "127.0.2.1");
    await vi.waitFor(() => expect(user.text()).toMatch(ok), { timeout: 2000 });
    await attackers[0]?.closed;
    expect(attackers[0]?.error()).toBe("ECONNRESET");
    expect(waiting.isClosed()).toBe(false);
    // The claim reaches the waiting block.
    const claim = await t.api({ method: "POST", url: `/block?user_access_token=${t.token}`, payload: { nodeid: node } });
    expect(claim.statusCode).toBe(200);
    await vi.waitFor(() => expect(waiting.text()).toMatch(/^HTTP\/1\.1 200 [\s\S]*"token":"/), { timeout: 2000 });
  });

  it("when every connection is proven, the machine's own GET /metrics is still answered (metrics reserve)", async () => {
    const { t, port } = await server({ maxConnections: 2, metricsReserve: 1 });
    const limits = t.server.services.limits;
    const devices = get(`/rest/v0/devices?user_access_token=${t.token}`);
    const users = [await peer(port, devices, "127.0.1.1"), await peer(port, devices, "127.0.1.2")];
    await vi.waitFor(() => expect(users.every((p) => ok.test(p.text()))).toBe(true), { timeout: 2000 });
    const remote = await peer(port, get("/metrics"), "127.0.2.1");
    await remote.closed;
    expect(remote.error()).toBe("ECONNRESET");
    // Before: reset like any other; now answered, with the count of refusals that explains it.
    const scrape = await peer(port, get("/metrics"), "127.0.0.1");
    await vi.waitFor(() => expect(scrape.text()).toMatch(/^HTTP\/1\.1 200 [\s\S]*blockkit_limit_hits_total\{limit="connections"\} 1\n/), { timeout: 2000 });
    expect(limits.reserveConnections).toBe(1);
    // The reserve is full: the next one is reset.
    const second = await peer(port, get("/healthz"), "127.0.0.1");
    await second.closed;
    expect(second.text()).toBe("");
    // Nothing else is served on a reserve connection: 503 with the envelope, closed.
    scrape.socket.write(devices);
    await scrape.closed;
    expect(scrape.text()).toMatch(/HTTP\/1\.1 503 [\s\S]*"result":0[\s\S]*connection cap/);
    await vi.waitFor(() => expect(limits.reserveConnections).toBe(0), { timeout: 2000 });
    expect(users.some((p) => p.isClosed())).toBe(false);
  });

  it("at the total cap, a scrape's connection is kept like an authenticated one; connections that never finish a request are reset instead", async () => {
    const { t, port } = await server({ maxConnections: 3, metricsReserve: 1 });
    const limits = t.server.services.limits;
    // The machine's own scraper, its connection kept alive between scrapes (as undici and Prometheus keep it).
    const scrape = await peer(port, get("/metrics"), "127.0.0.1");
    await vi.waitFor(() => expect(scrape.text()).toMatch(/^HTTP\/1\.1 200 /), { timeout: 2000 });
    // A flood of connections that never finish a request fills the cap, and goes on past it.
    const attackers: Peer[] = [];
    for (let i = 1; i <= 4; i++) attackers.push(await peer(port, slowBody("/auth/login"), `127.0.1.${i}`));
    await vi.waitFor(() => expect(limits.hits.get("connections_evicted")).toBe(2), { timeout: 2000 });
    // Before: the scrape's connection was the oldest not proven, and the first one reset.
    await attackers[0]?.closed;
    expect(attackers[0]?.error()).toBe("ECONNRESET");
    expect(scrape.isClosed()).toBe(false);
    scrape.socket.write(get("/metrics"));
    await vi.waitFor(() => expect(scrape.text().match(/HTTP\/1\.1 200 /g)).toHaveLength(2), { timeout: 2000 });
    expect(scrape.text()).toMatch(/blockkit_limit_hits_total\{limit="connections_evicted"\} 2\n/);
    // A scrape past the scrapers' share (metricsReserve, here 1) is answered, its connection not kept.
    const second = await peer(port, get("/metrics"), "127.0.0.1");
    await vi.waitFor(() => expect(second.text()).toMatch(/^HTTP\/1\.1 200 /), { timeout: 2000 });
    await peer(port, slowBody("/auth/login"), "127.0.1.5");
    await peer(port, slowBody("/auth/login"), "127.0.1.6");
    await second.closed;
    expect(second.error()).toBe("ECONNRESET");
    expect(scrape.isClosed()).toBe(false);
  });
});
