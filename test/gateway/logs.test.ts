/**
 * What the gateway says in its log at start and stop: a warning when it is ready with no link at
 * all, and no "connection lost" warning when it closes its own MQTT connection.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../gateway/daemon/config.js";
import { Gateway } from "../../gateway/daemon/gateway.js";
import { MqttLink } from "../../gateway/links/mqtt.js";
import { ADMIN_TOKEN, type LiveServer, startLive } from "../helpers/live.js";
import { waitFor } from "../helpers/wait.js";
import { tempDir } from "./helpers.js";

/** A pino logger whose lines land in `lines` as parsed objects. */
function capture(): { logger: pino.Logger; lines: { level: number; msg: string }[] } {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split("\n")) if (l) lines.push(JSON.parse(l) as { level: number; msg: string });
      done();
    },
  });
  return { logger: pino({ level: "debug" }, stream), lines };
}

describe("gateway log lines", () => {
  let srv: LiveServer;
  let dir: string;
  beforeAll(async () => {
    srv = await startLive();
    dir = tempDir("logs");
  });
  afterAll(async () => {
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("warns when it is ready with no link at all", async () => {
    const { logger, lines } = capture();
    const config = loadConfig({ flags: { server: srv.authUrl, nodeId: "LOGSNOLINK001", userToken: ADMIN_TOKEN, stateDir: join(dir, "state") } });
    const gw = new Gateway(config, { logger });
    try {
      await gw.start();
      const warn = lines.find((l) => l.level === 40 && /no links/.test(l.msg));
      expect(warn?.msg).toMatch(/no hardware node can reach this gateway/);
    } finally {
      await gw.stop();
    }
  });

  it("says nothing of a lost connection when it stops its MQTT link", async () => {
    const { logger, lines } = capture();
    const link = new MqttLink({ url: "mqtt://127.0.0.1:1883", prefix: `logs${process.pid}`, sink: { submitMany: (r) => r.length }, logger });
    await link.start();
    await waitFor("link up", () => link.state === "up");
    await link.stop();
    expect(lines.some((l) => /MQTT connected/.test(l.msg))).toBe(true);
    expect(lines.filter((l) => l.level >= 40).map((l) => l.msg)).toEqual([]);
  });
});
