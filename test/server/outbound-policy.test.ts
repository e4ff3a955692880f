/**
 * The outbound policy (server/services/outbound-policy.ts): its decisions, and its undici connector
 * on real loopback sockets (what is refused is never connected to; the address checked is the one
 * connected to).
 */
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";
import { request } from "undici";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OutboundPolicy, OutboundRefusedError, parseNetwork } from "../../server/services/outbound-policy.js";

describe("outbound policy decisions", () => {
  it("allows LAN and loopback targets by default and refuses link-local (metadata) networks", () => {
    const p = new OutboundPolicy();
    for (const a of ["192.168.1.20", "10.0.0.5", "172.16.3.4", "127.0.0.1", "::1", "fd12::7", "93.184.216.34"]) expect(p.check(a, 80)).toBeNull();
    for (const a of ["169.254.169.254", "::ffff:169.254.169.254", "fe80::1", "fe80::1%eth0", "fd00:ec2::254"]) expect(p.check(a, 80)).toMatch(/denied network/);
    expect(p.check("not-an-ip", 80)).toMatch(/not an IP address/);
  });

  it("refuses the server's own ports on every local address, unless a network as specific is allowed", () => {
    const p = new OutboundPolicy();
    p.setOwnPorts([8000, 8001]);
    const local = Object.values(networkInterfaces())
      .flatMap((l) => l ?? [])
      .map((a) => a.address);
    for (const a of ["127.0.0.1", "127.0.0.2", "::1", "0.0.0.0", "::", "::ffff:127.0.0.1", ...local]) {
      expect(p.check(a, 8000), a).toMatch(/own listener/);
      expect(p.check(a, 8001), a).toMatch(/own listener/);
    }
    expect(p.check("127.0.0.1", 8002)).toBeNull();
    const wide = new OutboundPolicy({ allow: ["0.0.0.0/0", "::/0"] });
    wide.setOwnPorts([8000]);
    expect(wide.check("127.0.0.1", 8000)).toMatch(/own listener/);
    const self = new OutboundPolicy({ allow: ["127.0.0.1/32"] });
    self.setOwnPorts([8000]);
    expect(self.check("127.0.0.1", 8000)).toBeNull();
    // An allow list allows only what it covers.
    expect(self.check("192.168.1.20", 80)).toMatch(/outside every --outbound-allow/);
  });

  it("lets the most specific network win, an operator's beating a built-in one on a tie", () => {
    const p = new OutboundPolicy({ allow: ["192.168.1.0/24", "192.168.1.50", "169.254.169.254/32"], deny: ["192.168.1.0/28", "192.168.1.50/32"] });
    expect(p.check("192.168.1.20", 80)).toBeNull();
    expect(p.check("192.168.1.5", 80)).toMatch(/192\.168\.1\.0\/28/);
    // A tie between two given networks: the deny wins.
    expect(p.check("192.168.1.50", 80)).toMatch(/denied/);
    expect(p.check("10.0.0.1", 80)).toMatch(/outside/);
    // An operator who allows the metadata address explicitly gets it.
    expect(p.check("169.254.169.254", 80)).toBeNull();
    expect(p.check("169.254.1.1", 80)).toMatch(/denied/);
  });

  it("refuses malformed networks naming the value", () => {
    for (const bad of ["10.0.0.0/33", "::/129", "300.1.1.1", "example.com", "10.0.0.0/x", ""]) expect(() => parseNetwork(bad)).toThrow(/is not a network/);
    expect(() => new OutboundPolicy({ deny: ["10.0.0.0/8", "nope"] })).toThrow(/outbound deny: "nope" is not a network/);
    expect(parseNetwork("10.1.2.3/8")).toEqual(parseNetwork("10.0.0.0/8"));
  });
});

describe("outbound policy connector (real loopback sockets)", () => {
  let server: Server;
  let port: number;
  let connections: number;
  const hosts: string[] = [];
  beforeEach(async () => {
    connections = 0;
    hosts.length = 0;
    server = createServer((req, res) => {
      hosts.push(req.headers.host ?? "");
      res.end("ok");
    });
    server.on("connection", () => connections++);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it("connects to allowed targets and refuses the server's own port without connecting", async () => {
    const p = new OutboundPolicy();
    const agent = p.agent({ connectTimeoutMs: 2000 });
    try {
      const ok = await request(`http://127.0.0.1:${port}/x`, { dispatcher: agent });
      expect(await ok.body.text()).toBe("ok");
      expect(connections).toBe(1);
      p.setOwnPorts([port]);
      const fresh = p.agent({ connectTimeoutMs: 2000 });
      await expect(request(`http://127.0.0.1:${port}/x`, { dispatcher: fresh })).rejects.toBeInstanceOf(OutboundRefusedError);
      await expect(request(`http://localhost:${port}/x`, { dispatcher: fresh })).rejects.toBeInstanceOf(OutboundRefusedError);
      await fresh.close();
      expect(connections).toBe(1);
    } finally {
      await agent.close();
    }
  });

  it("resolves a host name once and connects to the address it checked (no second lookup to rebind)", async () => {
    const lookups: string[] = [];
    // First answer: a denied address and the receiver; any later answer would point at the metadata address.
    const answers = [["169.254.169.254", "127.0.0.1"]];
    const p = new OutboundPolicy({}, async (host) => {
      lookups.push(host);
      return answers.shift() ?? ["169.254.169.254"];
    });
    const agent = p.agent({ connectTimeoutMs: 2000 });
    try {
      const res = await request(`http://hub.example:${port}/x`, { dispatcher: agent });
      expect(await res.body.text()).toBe("ok");
      expect(lookups).toEqual(["hub.example"]);
      expect(connections).toBe(1);
      expect(hosts).toEqual([`hub.example:${port}`]);
      // A new connection resolves again, and now finds only the denied address: refused, nothing connected.
      const other = p.agent({ connectTimeoutMs: 2000 });
      const refused = await request(`http://hub.example:${port}/x`, { dispatcher: other }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(OutboundRefusedError);
      expect((refused as Error).message).toMatch(/169\.254\.169\.254:\d+ is in a denied network/);
      await other.close();
      expect(connections).toBe(1);
    } finally {
      await agent.close();
    }
  });

  it("tries the next allowed address when one does not answer", async () => {
    // 127.0.0.2 at the receiver's port: nothing listens there (the receiver is on 127.0.0.1 only).
    const p = new OutboundPolicy({}, async () => ["127.0.0.2", "127.0.0.1"]);
    const agent = p.agent({ connectTimeoutMs: 2000 });
    try {
      const res = await request(`http://hub.example:${port}/x`, { dispatcher: agent });
      expect(await res.body.text()).toBe("ok");
      expect(connections).toBe(1);
    } finally {
      await agent.close();
    }
  });
});
