/**
 * The embedded broker's exposure: loopback by default; the LAN only with an account per node
 * (scrypt hashes), checked on CONNECT by a real MQTT client.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mqtt from "mqtt";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../gateway/daemon/config.js";
import { EmbeddedBroker } from "../../gateway/links/mqtt-broker.js";
import { hashMqttPassword } from "../../gateway/links/mqtt-users.js";

const connect = (url: string, username?: string, password?: string): Promise<string> =>
  new Promise((resolve) => {
    const c = mqtt.connect(url, { username, password, reconnectPeriod: 0, connectTimeout: 3000 });
    c.once("connect", () => {
      c.end(true);
      resolve("connected");
    });
    c.once("error", (err) => {
      c.end(true);
      resolve((err as { code?: number }).code === 4 || /bad user|not authorized/i.test(err.message) ? "refused" : `error ${err.message}`);
    });
  });

describe("embedded MQTT broker exposure", () => {
  let broker: EmbeddedBroker | undefined;
  afterEach(async () => {
    await broker?.stop();
    broker = undefined;
  });

  it("listens on loopback by default", async () => {
    broker = new EmbeddedBroker({ port: 0 });
    await broker.start();
    expect((broker as unknown as { server: { address(): { address: string } } }).server.address().address).toBe("127.0.0.1");
    expect(await connect(broker.url)).toBe("connected");
  });

  it("refuses to listen on the LAN without accounts (constructor and config)", () => {
    expect(() => new EmbeddedBroker({ port: 0, host: "0.0.0.0" })).toThrow(/needs users/);
    const dir = mkdtempSync(join(tmpdir(), "blockkit-mqtt-"));
    try {
      const file = join(dir, "gw.json");
      const base = { server: "http://hub.local:8000", nodeId: "PIGATEWAY0001" };
      writeFileSync(file, JSON.stringify({ ...base, mqtt: { listen: 1883, listenHost: "0.0.0.0" } }));
      expect(() => loadConfig({ file })).toThrow(/mqtt\.listenHost: 0\.0\.0\.0 opens the embedded broker to the LAN/);
      writeFileSync(file, JSON.stringify({ ...base, mqtt: { listen: 1883, listenHost: "0.0.0.0", users: [{ username: "esp", passwordHash: hashMqttPassword("x") }] } }));
      expect(loadConfig({ file }).mqtt?.users).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("with accounts, only a node with its password gets in; the gateway's own client too", async () => {
    broker = new EmbeddedBroker({ port: 0, host: "0.0.0.0", users: [{ username: "esp-kitchen", passwordHash: hashMqttPassword("kitchen-secret") }] });
    await broker.start();
    expect(await connect(broker.url, "esp-kitchen", "kitchen-secret")).toBe("connected");
    expect(await connect(broker.url, "esp-kitchen", "wrong")).toBe("refused");
    expect(await connect(broker.url, "nobody", "kitchen-secret")).toBe("refused");
    expect(await connect(broker.url)).toBe("refused");
    const own = broker.ownCredentials;
    expect(own).toBeDefined();
    expect(await connect(broker.url, own?.username, own?.password)).toBe("connected");
  });
});
