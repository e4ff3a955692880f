/**
 * `blockkit gateway --health-port 0 --mqtt-listen 0`: the kernel picks the ports, and the gateway
 * names the bound ones in its ready line (stdout) and its `gateway started` log line, as URLs a
 * client on this machine connects to: on 127.0.0.1, and on the IPv6 loopback (bracketed).
 */
import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import mqtt from "mqtt";
import { request } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, type LiveServer, startLive } from "../helpers/live.js";
import { type CliProcess, spawnCli, stopProcess } from "../helpers/process.js";
import { waitFor } from "../helpers/wait.js";
import { type GatewayListeners, waitForGatewayReady } from "./gateway-process.js";
import { tempDir } from "./helpers.js";

let srv: LiveServer;
const dir = tempDir("gw-ports");
const running: CliProcess[] = [];

beforeAll(async () => {
  srv = await startLive();
});
afterEach(async () => {
  for (const p of running.splice(0)) await stopProcess(p, "SIGKILL").catch(() => undefined);
});
afterAll(async () => {
  await srv?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A gateway on port 0 for both listeners, logging at info; resolves with what its ready line named. */
async function gatewayOnPortZero(name: string, extra: string[] = []): Promise<{ p: CliProcess; nodeId: string; at: GatewayListeners }> {
  const nodeId = `PORTS${randomBytes(5).toString("hex").toUpperCase()}`;
  const p = spawnCli(
    ["gateway", "--server", srv.authUrl, "--node-id", nodeId, "--user-token", ADMIN_TOKEN, "--state-dir", join(dir, name),
      "--mqtt-listen", "0", "--health-port", "0", "--log-level", "info", ...extra],
  );
  running.push(p);
  return { p, nodeId, at: await waitForGatewayReady(p) };
}

const healthz = async (url: string): Promise<{ agent: string; links: Record<string, string> }> =>
  (await (await request(`${url}/healthz`)).body.json()) as { agent: string; links: Record<string, string> };

describe("gateway listeners on port 0", () => {
  it("names the ports the kernel picked, in its ready line and its log, and both answer there", async () => {
    const { p, nodeId, at } = await gatewayOnPortZero("v4");
    expect(at.health).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(at.mqtt).toMatch(/^mqtt:\/\/127\.0\.0\.1:\d+$/);
    const started = JSON.parse((await p.waitForErrLine(/^\{.*"msg":"gateway started".*\}$/))[0]) as { health: string; mqtt: string };
    expect(started).toMatchObject({ health: at.health, mqtt: at.mqtt });

    const health = at.health as string;
    const h = await waitFor("the gateway online with its MQTT link up", async () => {
      const x = await healthz(health);
      return x.agent === "online" && x.links.mqtt === "up" ? x : null;
    });
    expect(h.links).toEqual({ mqtt: "up" });
    // A node on the named broker port: its reading reaches the server through the gateway.
    const node = await mqtt.connectAsync(at.mqtt as string, { clientId: `node-${nodeId}`, reconnectPeriod: 0 });
    try {
      await node.publishAsync("blockkit/7_0_9/data", "21.5", { qos: 1 });
    } finally {
      await node.endAsync();
    }
    const points = await waitFor("the reading on the server", async () => {
      const x = await srv.history(`${nodeId}_7_0_9`);
      return x.length > 0 ? x : null;
    });
    expect(points.map((x) => x.v)).toEqual([21.5]);
  });

  it("on the IPv6 loopback: bracketed URLs, and its own MQTT link reaches its broker there", async () => {
    const file = join(dir, "v6.json");
    writeFileSync(file, JSON.stringify({ health: { host: "::1" }, mqtt: { listenHost: "::1" } }));
    const { at } = await gatewayOnPortZero("v6", ["--config", file]);
    expect(at.health).toMatch(/^http:\/\/\[::1\]:\d+$/);
    expect(at.mqtt).toMatch(/^mqtt:\/\/\[::1\]:\d+$/);
    const health = at.health as string;
    await waitFor("its MQTT link up on [::1]", async () => (await healthz(health)).links.mqtt === "up");
    const node = await mqtt.connectAsync(at.mqtt as string, { clientId: "node-v6", reconnectPeriod: 0 });
    await node.endAsync();
  });
});
