/**
 * Outage: the server stops, readings keep coming over MQTT (Mosquitto), the gateway process is
 * killed with SIGKILL and restarted during the outage, the server comes back on the same data dir,
 * and the gateway is killed once more in the middle of the replay. Every reading is stored once.
 */
import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import mqtt, { type MqttClient } from "mqtt";
import { afterAll, expect, it } from "vitest";
import { ADMIN_TOKEN, type LiveServer, startLive } from "../helpers/live.js";
import { waitFor } from "../helpers/wait.js";
import { tempDir } from "./helpers.js";
import { GatewayProcess } from "./gateway-process.js";

const NODE = `OUTAGE${randomBytes(4).toString("hex").toUpperCase()}`;
const prefix = `bk-outage-${randomBytes(5).toString("hex")}`;
const dir = tempDir("outage");
let srv: LiveServer | null = null;
let gw: GatewayProcess | null = null;
let node: MqttClient | null = null;

afterAll(async () => {
  await gw?.kill("SIGTERM");
  if (node?.connected) await node.publishAsync(`${prefix}/gateway/status`, "", { qos: 1, retain: true });
  await node?.endAsync();
  await srv?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function publish(from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) await node?.publishAsync(`${prefix}/4_0_2000/data`, String(i), { qos: 1 });
}

it("stores every reading exactly once across a server outage, a SIGKILL and a restart", async () => {
  const dataDir = join(dir, "server");
  srv = await startLive({ dir: dataDir });
  const apiPort = Number(new URL(srv.authUrl).port);
  // Slow replay, so the second SIGKILL lands in its middle.
  writeFileSync(join(dir, "gw.json"), JSON.stringify({ outbox: { batchSize: 10, ratePerSecond: 100 } }));
  const args = [
    "--config", join(dir, "gw.json"),
    "--server", srv.authUrl,
    "--node-id", NODE,
    "--user-token", ADMIN_TOKEN,
    "--state-dir", join(dir, "state"),
    "--mqtt-url", "mqtt://127.0.0.1:1883",
    "--mqtt-prefix", prefix,
  ];
  gw = new GatewayProcess(args);
  await gw.start();
  node = await mqtt.connectAsync("mqtt://127.0.0.1:1883", { clientId: `node-${prefix}` });
  await waitFor("gateway online with its MQTT link", async () => {
    const h = await gw?.health();
    return h?.agent === "online" && h.links.mqtt === "up";
  });
  await publish(0, 10);
  await waitFor("first readings stored", async () => (await srv?.history(`${NODE}_4_0_2000`))?.length === 10);

  await srv.close({ keepDir: true });
  srv = null;
  await publish(10, 60);
  await waitFor("50 readings buffered", async () => (await gw?.health())?.outbox.rows === 50);

  await gw.kill("SIGKILL");
  await gw.start();
  await waitFor("MQTT link back", async () => (await gw?.health())?.links.mqtt === "up");
  expect((await gw.health()).outbox.rows).toBe(50);
  await publish(60, 110);
  await waitFor("100 readings buffered", async () => (await gw?.health())?.outbox.rows === 100);

  srv = await startLive({ dir: dataDir, port: apiPort });
  await waitFor("replay under way", async () => {
    const rows = (await gw?.health())?.outbox.rows ?? 100;
    return rows < 90 && rows > 0;
  }, 20_000, 5);
  await gw.kill("SIGKILL");
  await gw.start();
  const points = await waitFor("all 110 readings stored", async () => {
    const h = (await srv?.history(`${NODE}_4_0_2000`)) ?? [];
    return h.length >= 110 && (await gw?.health())?.outbox.rows === 0 ? h : null;
  }, 30_000);
  const values = points.map((p) => Number(p.v)).sort((a, b) => a - b);
  expect(values).toEqual(Array.from({ length: 110 }, (_, i) => i));
  expect((await gw.health()).outbox.dropped).toBe(0);
}, 90_000);
