/**
 * The gateway daemon counts the 429s it asks again (activation, uploads, commands polls), and the
 * camera snapshot uploads answered 429 (dropped), in the agent's stats and on /metrics
 * (`blockkit_gateway_throttled_total{kind}`). A real HTTP peer on
 * loopback answers the first call of each kind 429 with Retry-After: 1 (as test/gateway/retry-after.test.ts),
 * then 200; the daemon runs in-process with its health port on a port the kernel picks.
 */
import { rmSync, writeFileSync } from "node:fs";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { request } from "undici";
import { afterEach, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../gateway/daemon/config.js";
import { Gateway } from "../../gateway/daemon/gateway.js";
import { tempDir } from "./helpers.js";

const NODE = "THROTTLEDGW001";
const envelope = JSON.stringify({ result: 1, error: null, id: 0 });
const limited = JSON.stringify({ result: 0, error: "rate limit exceeded for this credential; slow down", id: 0 });

type Kind = "activate" | "uplink" | "poll";

/** A peer that answers the first call of each kind 429 with Retry-After: 1, then as a server would (later polls are held). */
async function throttlingPeer(): Promise<{ origin: string; calls: Record<Kind, number>; close(): Promise<void> }> {
  const calls: Record<Kind, number> = { activate: 0, uplink: 0, poll: 0 };
  const answer = (req: IncomingMessage, res: ServerResponse): void => {
    const path = req.url?.split("?")[0] ?? "";
    const kind: Kind = path.endsWith("/activate") ? "activate" : path.endsWith("/commands") ? "poll" : "uplink";
    if (++calls[kind] === 1) {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "1" }).end(limited);
    } else if (kind === "activate") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ token: "block-token-0123456789" }));
    } else if (kind === "uplink") res.writeHead(200, { "content-type": "application/json" }).end(envelope);
    // A later poll is held until the gateway stops (it aborts it) or the peer closes.
  };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => answer(req, res));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describe("gateway daemon on 429s", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("counts throttled activations, uploads and polls in the agent's stats and on /metrics", { timeout: 20_000 }, async () => {
    const peer = await throttlingPeer();
    cleanups.push(peer.close);
    const dir = tempDir("throttled");
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const config = loadConfig({
      flags: { server: peer.origin, nodeId: NODE, userToken: "user-token-0123456789", stateDir: join(dir, "state"), healthPort: 0, logLevel: "silent" },
      env: {},
    });
    const gw = new Gateway(config, { env: {} });
    cleanups.push(() => gw.stop());
    await gw.start();
    await vi.waitFor(() => expect(gw.agent.stats().activations).toBe(1), { timeout: 8000 });
    expect(gw.agent.submit({ G: "1", V: 0, D: 9, DA: "21.5" })).toBe(true);
    await vi.waitFor(() => expect(gw.agent.stats().acked).toBe(1), { timeout: 8000 });
    await vi.waitFor(() => expect(peer.calls.poll).toBe(2), { timeout: 8000 });
    expect(peer.calls).toEqual({ activate: 2, uplink: 2, poll: 2 });
    // Before: no count of these anywhere; a 429 is not an error, and the server stayed reachable.
    expect(gw.agent.stats()).toMatchObject({ throttled: { activate: 1, uplink: 1, poll: 1 }, rejected: 0, reconnects: 0, state: "online" });
    const text = await (await request(`http://127.0.0.1:${gw.health?.port}/metrics`)).body.text();
    expect(text).toContain("# TYPE blockkit_gateway_throttled_total counter");
    for (const kind of ["activate", "uplink", "poll"]) expect(text).toMatch(new RegExp(`^blockkit_gateway_throttled_total\\{kind="${kind}"\\} 1$`, "m"));
  });

  it("counts a camera snapshot upload answered 429 under kind snapshot (dropped, not sent again)", { timeout: 20_000 }, async () => {
    // A peer that activates, hands the camera one snapshot command, and answers every upload 429.
    const uploads: string[] = [];
    let polls = 0;
    const server: Server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const path = req.url?.split("?")[0] ?? "";
        const json = (body: unknown): void => void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
        if (path.endsWith("/activate")) json({ token: "block-token-0123456789" });
        else if (path.endsWith("/snapshot")) {
          uploads.push(`${req.method} ${path} ${req.headers["content-type"]}`);
          res.writeHead(429, { "content-type": "application/json", "retry-after": "1" }).end(limited);
        } else if (path.endsWith("/commands")) {
          // The first poll gets the command; later ones are held until the gateway stops.
          if (++polls === 1) json({ DEVICE: [{ G: "0", V: 0, D: 1004, DA: "1", GUID: `${NODE}_0_0_1004` }] });
        } else res.writeHead(200, { "content-type": "application/json" }).end(envelope);
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    cleanups.push(async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    });
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const dir = tempDir("throttled-snapshot");
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const image = join(dir, "snapshot.jpg");
    writeFileSync(image, Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0xff, 0xd9]));
    const file = join(dir, "gateway.json");
    writeFileSync(file, JSON.stringify({ camera: { file: image } }));
    const config = loadConfig({
      file,
      flags: { server: origin, stream: origin, nodeId: NODE, userToken: "user-token-0123456789", stateDir: join(dir, "state"), healthPort: 0, logLevel: "silent" },
      env: {},
    });
    const gw = new Gateway(config, { env: {} });
    cleanups.push(() => gw.stop());
    await gw.start();
    await vi.waitFor(() => expect(gw.agent.stats().snapshotFailures).toBe(1), { timeout: 8000 });
    expect(uploads).toEqual([`POST /rest/v0/camera/${NODE}_0_0_1004/snapshot image/jpeg`]);
    // Before: the 429 was a snapshot failure like any other, counted nowhere as throttled.
    expect(gw.agent.stats()).toMatchObject({ throttled: { activate: 0, uplink: 0, poll: 0, snapshot: 1 }, snapshots: 0 });
    const text = await (await request(`http://127.0.0.1:${gw.health?.port}/metrics`)).body.text();
    expect(text).toMatch(/^blockkit_gateway_throttled_total\{kind="snapshot"\} 1$/m);
    expect(text).toMatch(/^blockkit_gateway_throttled_total\{kind="poll"\} 0$/m);
  });
});
