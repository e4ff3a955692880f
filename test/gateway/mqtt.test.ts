/**
 * The MQTT link with mqtt.js as the node, against the embedded aedes broker and against the real
 * Mosquitto on 127.0.0.1:1883 (a unique prefix per test): readings reach a real server, commands
 * come back to the node QoS 1 and not retained, the status is retained with `offline` as the will.
 */
import { randomBytes } from "node:crypto";
import mqtt, { type MqttClient } from "mqtt";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BlockAgent } from "../../gateway/agent/agent.js";
import { MemoryOutbox, MemoryTokenStore } from "../../gateway/agent/memory.js";
import { MqttLink } from "../../gateway/links/mqtt.js";
import { EmbeddedBroker } from "../../gateway/links/mqtt-broker.js";
import { parseNodePayload, parseNodeTopic } from "../../protocol/mqtt-topics.js";
import { ADMIN_TOKEN, type LiveServer, startLive } from "../helpers/live.js";
import { waitFor } from "../helpers/wait.js";

let srv: LiveServer;
beforeAll(async () => {
  srv = await startLive();
});
afterAll(async () => {
  await srv.close();
});

describe("MQTT topics", () => {
  it("parses node topics and payloads, and ignores the gateway's own topics", () => {
    expect(parseNodeTopic("home/gw", "home/gw/1_0_9/data")).toEqual({ G: "1", V: 0, D: 9, kind: "data" });
    expect(parseNodeTopic("home/gw", "home/gw/gateway/status")).toBeNull();
    expect(parseNodeTopic("home/gw", "home/gw/1_0_9/command")).toBeNull();
    expect(parseNodeTopic("home/gw", "other/1_0_9/data")).toBeNull();
    expect(parseNodePayload("data", Buffer.from("21.5"))).toBe("21.5");
    expect(parseNodePayload("data", Buffer.from('{"DA":22}'))).toBe("22");
    expect(parseNodePayload("config", Buffer.from('{"type":"PLUGIN"}'))).toBe("PLUGIN");
    expect(parseNodePayload("data", Buffer.from(""))).toBeNull();
    expect(parseNodePayload("data", Buffer.from('{"nope":1}'))).toBeNull();
  });
});

type Setup = { url: () => string; before?: () => Promise<void>; after?: () => Promise<void> };
const broker = new EmbeddedBroker({ port: 0, host: "127.0.0.1" });
const setups: [string, Setup][] = [
  ["embedded aedes broker", { url: () => broker.url, before: () => broker.start(), after: () => broker.stop() }],
  ["Mosquitto on 127.0.0.1:1883", { url: () => "mqtt://127.0.0.1:1883" }],
];

describe.each(setups)("MQTT link against the %s", (_name, setup) => {
  let agent: BlockAgent;
  let link: MqttLink;
  let node: MqttClient;
  let prefix: string;
  let nodeId: string;

  beforeAll(async () => {
    await setup.before?.();
  });
  afterAll(async () => {
    await setup.after?.();
  });

  afterEach(async () => {
    // No retained junk left on the shared broker.
    if (node?.connected) await node.publishAsync(`${prefix}/gateway/status`, "", { qos: 1, retain: true });
    await node?.endAsync();
    await link?.stop();
    await agent?.stop();
    await agent?.client.close();
  });

  async function start(): Promise<void> {
    prefix = `bk-test-${randomBytes(6).toString("hex")}`;
    nodeId = `MQTT${randomBytes(6).toString("hex").toUpperCase()}`;
    agent = new BlockAgent({ nodeId, baseUrl: srv.baseUrl, outbox: new MemoryOutbox(), tokens: new MemoryTokenStore(), userToken: ADMIN_TOKEN });
    link = new MqttLink({ url: setup.url(), prefix, sink: agent, reconnectPeriodMs: 200 });
    agent.addLink(link);
    const activated = new Promise((r) => agent.once("activated", r));
    await agent.start();
    await activated;
    await link.start();
    await waitFor("link up", () => link.state === "up");
    node = await mqtt.connectAsync(setup.url(), { clientId: `node-${prefix}` });
  }

  it("carries readings and config events to the server and commands back to the node", async () => {
    await start();
    const status = await new Promise<{ payload: string; retain: boolean }>((resolve) => {
      node.on("message", (topic, payload, packet) => {
        if (topic === `${prefix}/gateway/status`) resolve({ payload: payload.toString(), retain: packet.retain });
      });
      void node.subscribeAsync(`${prefix}/gateway/status`);
    });
    expect(status).toEqual({ payload: "online", retain: true });
    await node.publishAsync(`${prefix}/5_0_9/data`, "19.5", { qos: 1 });
    await node.publishAsync(`${prefix}/5_0_9/heartbeat`, '{"DA":19.75}', { qos: 1 });
    await node.publishAsync(`${prefix}/5_0_1002/config`, "PLUGIN", { qos: 1 });
    await node.publishAsync(`${prefix}/5_0_9/data`, "", { qos: 1 });
    const h = await waitFor("two readings", async () => {
      const x = await srv.history(`${nodeId}_5_0_9`);
      return x.length === 2 ? x : null;
    });
    expect(h.map((p) => p.v)).toEqual([19.5, 19.75]);
    await waitFor("garbage counted", () => link.counters().garbage === 1);

    const commands: { topic: string; payload: string; qos: number; retain: boolean }[] = [];
    node.on("message", (topic, payload, packet) => {
      if (topic.endsWith("/command")) commands.push({ topic, payload: payload.toString(), qos: packet.qos, retain: packet.retain });
    });
    await node.subscribeAsync(`${prefix}/+/command`, { qos: 1 });
    await waitFor("relay device", async () => (await srv.user("GET", `/device/${nodeId}_5_0_1002`)).status === 200);
    expect((await srv.user("PUT", `/device/${nodeId}_5_0_1002`, { DA: "1" })).status).toBe(200);
    await waitFor("command at the node", () => commands.length === 1);
    expect(commands[0]).toEqual({ topic: `${prefix}/5_0_1002/command`, payload: "1", qos: 1, retain: false });
    await waitFor("delivered counted", () => agent.stats().commandsDelivered === 1);
  });

  it("leaves `offline` retained when it stops, and the broker publishes the will when it vanishes", async () => {
    await start();
    await link.stop();
    const watcher = await mqtt.connectAsync(setup.url());
    const got = await new Promise<string>((resolve) => {
      watcher.on("message", (_t, payload) => resolve(payload.toString()));
      void watcher.subscribeAsync(`${prefix}/gateway/status`);
    });
    expect(got).toBe("offline");
    await watcher.endAsync();
    // Vanishing without a goodbye: the will, retained.
    const vanishing = new MqttLink({ url: setup.url(), prefix, sink: agent, name: "mqtt2" });
    await vanishing.start();
    await waitFor("second link up", () => vanishing.state === "up");
    const watch2 = await mqtt.connectAsync(setup.url());
    const seen: string[] = [];
    watch2.on("message", (_t, payload) => seen.push(payload.toString()));
    await watch2.subscribeAsync(`${prefix}/gateway/status`);
    await waitFor("online seen", () => seen.includes("online"));
    (vanishing as unknown as { client: MqttClient }).client.stream.destroy();
    await waitFor("last will seen", () => seen.at(-1) === "offline", 5000);
    await watch2.endAsync();
    await vanishing.stop();
  });
});
