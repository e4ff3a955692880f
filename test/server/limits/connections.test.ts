/**
 * Hostile clients on real sockets: slow bodies and slow headers are answered 408 and closed, one
 * address cannot hold more than its share of connections or activation holds, the server as a
 * whole no more than its cap, and a normal client is still answered.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { type Socket, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { startServerProcess, stopProcess } from "../../helpers/process.js";
import { type Peer, closeAll, healthz, peer, peers, server, slowBody } from "./raw-peers.js";

afterEach(closeAll);

describe("slow clients and connection caps", () => {
  it("a body that never arrives is answered 408 with the envelope and closed within the request timeout", async () => {
    const lines: string[] = [];
    const { port } = await server({ requestTimeoutMs: 600, headersTimeoutMs: 500 }, lines);
    const started = Date.now();
    const login = await peer(port, slowBody("/auth/login"));
    const token = await peer(port, slowBody("/oauth/access_token"));
    const headers = await peer(port, "GET /healthz HTTP/1.1\r\nHost: x\r\n");
    await Promise.all([login.closed, token.closed, headers.closed]);
    expect(Date.now() - started).toBeLessThan(5000);
    for (const p of [login, token, headers]) {
      expect(p.text()).toMatch(/^HTTP\/1\.1 408 /);
      expect(p.text()).toContain('"result":0');
    }
    // Logged, once for the three (one line per limit every 10 s at most).
    await vi.waitFor(() => expect(lines.filter((l) => l.includes("request_timeout"))).toHaveLength(1), { timeout: 2000 });
    expect(await healthz(port)).toBe("HTTP/1.1 200 OK");
  });

  it("caps connections per address; other addresses are still served", async () => {
    const { t, port } = await server({ maxConnectionsPerAddress: 5 });
    for (let i = 0; i < 5; i++) await peer(port, slowBody("/auth/login"), "127.0.0.2");
    // Reset at accept (RST, not a FIN: no TIME_WAIT left on the server), even before it sent anything.
    const over = await peer(port, "", "127.0.0.2");
    await over.closed;
    expect(over.text()).toBe("");
    expect(over.error()).toBe("ECONNRESET");
    expect(t.server.services.limits.hits.get("connections_per_address")).toBe(1);
    expect(await healthz(port, "127.0.0.3")).toBe("HTTP/1.1 200 OK");
    // The machine's own address is not capped per address (a simulator, a gateway on the host).
    for (let i = 0; i < 6; i++) await peer(port, slowBody("/auth/login"), "127.0.0.1");
    expect(await healthz(port, "127.0.0.1")).toBe("HTTP/1.1 200 OK");
    expect(t.server.services.limits.hits.get("connections_per_address")).toBe(1);
    // A connection that closes frees its place.
    peers[0]?.socket.destroy();
    await peers[0]?.closed;
    await vi.waitFor(async () => expect(await healthz(port, "127.0.0.2")).toBe("HTTP/1.1 200 OK"), { timeout: 2000 });
  });

  it("caps connections in total, over both listeners", async () => {
    const { t, port } = await server({ maxConnections: 6 });
    const limits = t.server.services.limits;
    const streamPort = (t.server.stream.server.address() as { port: number }).port;
    const devices = `GET /rest/v0/devices?user_access_token=${t.token} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const users: Peer[] = [];
    for (let i = 0; i < 3; i++) users.push(await peer(port, devices, `127.0.1.${i + 1}`));
    const slow: Peer[] = [];
    for (let i = 0; i < 3; i++) slow.push(await peer(streamPort, slowBody("/healthz"), "127.0.0.1"));
    await vi.waitFor(() => expect(users.every((p) => /^HTTP\/1\.1 200 /.test(p.text()))).toBe(true), { timeout: 2000 });
    // Full: a newcomer on the API listener makes room by resetting the oldest stream connection.
    for (let i = 0; i < 3; i++) users.push(await peer(port, devices, `127.0.1.${i + 4}`));
    await Promise.all(slow.map((p) => p.closed));
    await vi.waitFor(() => expect(users.every((p) => /^HTTP\/1\.1 200 /.test(p.text()))).toBe(true), { timeout: 2000 });
    expect(limits.hits.get("connections_evicted")).toBe(3);
    // Full of authenticated connections: a new one is reset at once, on either listener (from
    // an address other than the machine's own, which may take a place of the metrics reserve).
    const over = await peer(streamPort, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "127.0.1.9");
    await over.closed;
    expect(over.text()).toBe("");
    expect(limits.hits.get("connections")).toBe(1);
    expect(limits.openConnections).toBe(6);
  });

  it("at the total cap, the oldest connection not yet authenticated is reset to make room; authenticated ones are kept", async () => {
    // Attackers from three addresses, each under its per-address cap, fill the total cap with
    // bodies that never arrive (a slow-body flood from many addresses). Before: every new
    // connection was reset until their request timeouts (30 s) freed places.
    const { t, port } = await server({ maxConnections: 6, maxConnectionsPerAddress: 3 });
    const limits = t.server.services.limits;
    const attackers: Peer[] = [];
    for (let i = 0; i < 6; i++) attackers.push(await peer(port, slowBody("/auth/login"), `127.0.1.${(i % 3) + 1}`));
    await vi.waitFor(() => expect(limits.openConnections).toBe(6), { timeout: 2000 });
    // A user's request on a new connection: admitted, the oldest attacker is reset.
    const devices = `GET /rest/v0/devices?user_access_token=${t.token} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const user = await peer(port, devices, "127.0.2.1");
    await vi.waitFor(() => expect(user.text()).toMatch(/^HTTP\/1\.1 200 /), { timeout: 2000 });
    await attackers[0]?.closed;
    expect(attackers[0]?.error()).toBe("ECONNRESET");
    expect(attackers.slice(1).some((a) => a.isClosed())).toBe(false);
    expect(limits.hits.get("connections_evicted")).toBe(1);
    expect(limits.hits.get("connections")).toBeUndefined();
    // The user's kept-alive connection is proven: the next newcomers evict attackers, oldest first, not it.
    const more: Peer[] = [];
    for (let i = 0; i < 5; i++) more.push(await peer(port, devices, `127.0.2.${i + 2}`));
    await vi.waitFor(() => expect(more.every((p) => /^HTTP\/1\.1 200 /.test(p.text()))).toBe(true), { timeout: 2000 });
    await Promise.all(attackers.map((a) => a.closed));
    expect(user.isClosed()).toBe(false);
    expect(limits.unprovenConnections).toBe(0);
    expect(limits.openConnections).toBe(6);
    // Every open connection is proven: a new one is refused, nothing is evicted.
    const over = await peer(port, devices, "127.0.2.9");
    await over.closed;
    expect(over.text()).toBe("");
    expect(limits.hits.get("connections")).toBe(1);
    expect(limits.hits.get("connections_evicted")).toBe(6);
    expect([user, ...more].some((p) => p.isClosed())).toBe(false);
    user.socket.write(devices);
    await vi.waitFor(() => expect(user.text().match(/HTTP\/1\.1 200 /g)).toHaveLength(2), { timeout: 2000 });
  });

  it("a block event on the fast lane proves its connection too", async () => {
    const { t, port } = await server({ maxConnections: 2 });
    const blockToken = await t.activate("EVICTFAST0001");
    const body = JSON.stringify({ G: "0", V: 0, D: 9, DA: "1" });
    const event = `POST /rest/v0/block/EVICTFAST0001/data HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Service-Token: ${blockToken}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    // The first event goes through fastify and puts the token in the read cache; the lane takes the next.
    const first = await peer(port, event, "127.0.1.1");
    await vi.waitFor(() => expect(first.text()).toMatch(/^HTTP\/1\.1 200 /), { timeout: 2000 });
    first.socket.destroy();
    await vi.waitFor(() => expect(t.server.services.limits.openConnections).toBe(0), { timeout: 2000 });
    const block = await peer(port, event, "127.0.1.1");
    await vi.waitFor(() => expect(block.text()).toMatch(/^HTTP\/1\.1 200 /), { timeout: 2000 });
    expect(t.server.api.fastIngest?.stats.taken).toBe(1);
    const attacker = await peer(port, slowBody("/auth/login"), "127.0.1.2");
    // The cap is full with one proven and one unproven connection: the newcomer evicts the attacker.
    expect(await healthz(port, "127.0.1.3")).toBe("HTTP/1.1 200 OK");
    await attacker.closed;
    expect(block.isClosed()).toBe(false);
  });

  it("connections wait in a deep accept queue while the server is busy (listen backlog past Node's 511)", async () => {
    // A stopped server process stands for an event loop busy for a while under a connect flood: the
    // kernel completes handshakes into the accept queue, and past the backlog it drops the SYNs
    // (the client sends again after 1 s, 3 s, ...). Linux caps the backlog at net.core.somaxconn.
    const n = Math.min(1200, Number(readFileSync("/proc/sys/net/core/somaxconn", "utf8")));
    const dir = mkdtempSync(join(tmpdir(), "bk-backlog-"));
    const p = await startServerProcess({ dataDir: dir, adminToken: "backlog-admin-token-000000000001" });
    const sockets: Socket[] = [];
    try {
      const port = Number(new URL(p.baseUrl).port);
      p.child.kill("SIGSTOP");
      let connected = 0;
      for (let i = 0; i < n; i++) {
        const s = connect({ host: "127.0.0.1", port });
        s.on("error", () => undefined);
        s.once("connect", () => connected++);
        sockets.push(s);
      }
      await vi.waitFor(() => expect(connected).toBe(n), { timeout: 5000, interval: 50 });
      p.child.kill("SIGCONT");
      expect(await healthz(port)).toBe("HTTP/1.1 200 OK");
    } finally {
      for (const s of sockets) s.destroy();
      p.child.kill("SIGCONT");
      await stopProcess(p);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("caps activation holds per address and in total (429 with the envelope and Retry-After)", async () => {
    const { t, port } = await server({ maxActivationHoldsPerAddress: 2, maxActivationHolds: 3 });
    const hold = (n: number, from: string) => peer(port, `GET /rest/v0/block/ACTHOLD0000${n}/activate HTTP/1.1\r\nHost: x\r\n\r\n`, from);
    await hold(1, "127.0.0.2");
    await hold(2, "127.0.0.2");
    await vi.waitFor(() => expect(t.server.services.activation.heldCount).toBe(2), { timeout: 2000 });
    const third = await hold(3, "127.0.0.2");
    await vi.waitFor(() => expect(third.text()).toMatch(/^HTTP\/1\.1 429 [\s\S]*too many activation requests held from this address/), { timeout: 2000 });
    expect(third.text()).toMatch(/\r\nretry-after: 30\r\n/i);
    await hold(4, "127.0.0.3");
    await vi.waitFor(() => expect(t.server.services.activation.heldCount).toBe(3), { timeout: 2000 });
    const fifth = await hold(5, "127.0.0.4");
    await vi.waitFor(() => expect(fifth.text()).toMatch(/^HTTP\/1\.1 429 [\s\S]*"result":0/), { timeout: 2000 });
    // Retry-After: the hold's length (30 s by default), when a held request ends at the latest.
    expect(fifth.text()).toMatch(/\r\nretry-after: 30\r\n/i);
    // A hold that ends gives its place back.
    peers[0]?.socket.destroy();
    await vi.waitFor(() => expect(t.server.services.activation.heldCount).toBe(2), { timeout: 2000 });
    await hold(6, "127.0.0.4");
    await vi.waitFor(() => expect(t.server.services.activation.heldCount).toBe(3), { timeout: 2000 });
  });
});
