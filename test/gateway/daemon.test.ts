/**
 * The daemon in-process: embedded MQTT broker + mock serial port, /healthz and /metrics on a real
 * port, `--record` lines, sd_notify READY=1 to a real unix datagram socket (socat), and a camera
 * snapshot uploaded to a local HTTP receiver.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import mqtt from "mqtt";
import { SerialPortMock } from "serialport";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SerialPortStream } from "@serialport/stream";
import { loadConfig } from "../../gateway/daemon/config.js";
import { Gateway } from "../../gateway/daemon/gateway.js";
import { ADMIN_TOKEN, type LiveServer, startLive } from "../helpers/live.js";
import { waitFor } from "../helpers/wait.js";
import { tempDir } from "./helpers.js";

const NODE = "DAEMONTEST001";
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4, 0xff, 0xd9]);
let srv: LiveServer;
let dir: string;
let gw: Gateway;
let receiver: Server;
let notifyRecv: ChildProcess;
let notified = "";
/** When each WATCHDOG=1 arrived (ms). */
const pings: number[] = [];
const uploads: { url: string; type: string; token: string; body: Buffer }[] = [];
let mockPort: { emitData(b: Buffer): void } | null = null;

beforeAll(async () => {
  srv = await startLive();
  dir = tempDir("daemon");
  // The snapshot endpoint of the stream host is another engineer's; a local receiver stands in.
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      uploads.push({ url: req.url ?? "", type: String(req.headers["content-type"]), token: String(req.headers["x-service-token"]), body: Buffer.concat(chunks) });
      res.writeHead(200, { "content-type": "application/json" }).end('{"result":1,"error":null,"id":0}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const sock = join(dir, "notify.sock");
  notifyRecv = spawn("socat", ["-u", `UNIX-RECV:${sock}`, "STDOUT"], { stdio: ["ignore", "pipe", "ignore"] });
  notifyRecv.stdout?.on("data", (c: Buffer) => {
    notified += c.toString();
    for (const _ of c.toString().matchAll(/WATCHDOG=1/g)) pings.push(Date.now());
  });
  await waitFor("notify socket", () => existsSync(sock));
  writeFileSync(join(dir, "snap.jpg"), JPEG);
  SerialPortMock.binding.createPort("/dev/ttyDAEMON", { echo: false, record: true });
  const config = loadConfig({
    flags: {
      server: srv.authUrl,
      stream: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
      nodeId: NODE,
      userToken: ADMIN_TOKEN,
      stateDir: join(dir, "state"),
      serial: "/dev/ttyDAEMON",
      mqttListen: 0,
      healthPort: 0,
      record: join(dir, "frames.jsonl"),
      logLevel: "silent",
    },
    env: {},
  });
  const withCamera = { ...config, camera: { G: "0", file: join(dir, "snap.jpg"), timeoutMs: 2000 }, mqtt: { ...config.mqtt, listenHost: "127.0.0.1" } };
  gw = new Gateway(withCamera as typeof config, {
    env: { NOTIFY_SOCKET: sock, WATCHDOG_USEC: "1000000" },
    serialBinding: {
      list: () => SerialPortMock.list(),
      identify: async (p) => p,
      create: (path, baudRate) => {
        const port = new SerialPortMock({ path, baudRate, autoOpen: false });
        port.once("open", () => (mockPort = (port as unknown as { port: { emitData(b: Buffer): void } }).port));
        return port as unknown as SerialPortStream;
      },
    },
  });
  await gw.start();
});

afterAll(async () => {
  await gw?.stop();
  notifyRecv?.kill();
  await new Promise<void>((r) => receiver.close(() => r()));
  await srv.close();
  SerialPortMock.binding.reset();
  rmSync(dir, { recursive: true, force: true });
});

describe("gateway daemon", () => {
  it("tells systemd it is ready, then pings the watchdog every WATCHDOG_USEC / 2", async () => {
    await waitFor("READY=1", () => notified.includes("READY=1"), 5000);
    // WATCHDOG_USEC is 1 s: a ping every 500 ms. The mean gap over four pings keeps a late start
    // or arrival from counting more than a quarter (each ping is sent by a child process).
    await waitFor("five WATCHDOG=1", () => pings.length >= 5, 10_000);
    const meanGap = ((pings[4] as number) - (pings[0] as number)) / 4;
    expect(meanGap).toBeGreaterThan(350);
    expect(meanGap).toBeLessThan(800);
  });

  it("bridges serial and MQTT at once, records every frame, and reports health and metrics", async () => {
    await waitFor("links up", () => gw.links.every((l) => l.state === "up") && mockPort !== null);
    mockPort?.emitData(Buffer.from('{"DEVICE":[{"G":"1","V":0,"D":9,"DA":"20.5"}]}\r\n'));
    const node = await mqtt.connectAsync(gw.broker?.url ?? "");
    await node.publishAsync("blockkit/7_0_8/data", "55", { qos: 1 });
    await node.endAsync();
    await waitFor("serial reading", async () => (await srv.history(`${NODE}_1_0_9`)).length === 1);
    await waitFor("mqtt reading", async () => (await srv.history(`${NODE}_7_0_8`)).length === 1);
    await waitFor("outbox drained", () => gw.agent.stats().outboxRows === 0);
    const lines = await waitFor("recorded frames", () => {
      const l = readFileSync(join(dir, "frames.jsonl"), "utf8").trim().split("\n").filter(Boolean);
      return l.length >= 2 ? l.map((x) => JSON.parse(x) as Record<string, unknown>) : null;
    });
    expect(lines).toContainEqual(expect.objectContaining({ link: "serial", frame: '{"DEVICE":[{"G":"1","V":0,"D":9,"DA":"20.5"}]}' }));
    expect(lines).toContainEqual(expect.objectContaining({ link: "mqtt", topic: "blockkit/7_0_8/data", frame: "55" }));
    expect(typeof lines[0]?.t).toBe("number");

    const base = `http://127.0.0.1:${gw.health?.port}`;
    const h = await request(`${base}/healthz`);
    const body = (await h.body.json()) as Record<string, unknown>;
    expect(h.statusCode).toBe(200);
    expect(body).toMatchObject({ agent: "online", links: { serial: "up", mqtt: "up" }, outbox: { rows: 0, dropped: 0 } });
    const m = await (await request(`${base}/metrics`)).body.text();
    expect(m).toMatch(/^blockkit_gateway_outbox_rows 0$/m);
    expect(m).toMatch(/^blockkit_gateway_outbox_dropped_total 0$/m);
    expect(m).toMatch(/^blockkit_gateway_link_up\{link="serial"\} 1$/m);
    expect(m).toMatch(/^blockkit_gateway_link_up\{link="mqtt"\} 1$/m);
    expect(m).toMatch(/^blockkit_gateway_readings_acked_total [1-9]/m);
    expect(m).toMatch(/^blockkit_gateway_last_server_contact_seconds [1-9]/m);
    expect(m).toMatch(/^blockkit_gateway_server_reconnects_total 0$/m);
    expect((await request(`${base}/nope`)).statusCode).toBe(404);
  });

  it("answers a camera command with a snapshot upload", async () => {
    await waitFor("camera device", async () => (await srv.user("GET", `/device/${NODE}_0_0_1004`)).status === 200);
    expect((await srv.user("PUT", `/device/${NODE}_0_0_1004`, { DA: "1" })).status).toBe(200);
    await waitFor("snapshot uploaded", () => uploads.length === 1);
    expect(uploads[0]).toMatchObject({ url: `/rest/v0/camera/${NODE}_0_0_1004/snapshot`, type: "image/jpeg" });
    expect(uploads[0]?.body.equals(JPEG)).toBe(true);
    expect(uploads[0]?.token.length).toBeGreaterThan(16);
    const m = await (await request(`http://127.0.0.1:${gw.health?.port}/metrics`)).body.text();
    expect(m).toMatch(/^blockkit_gateway_commands_delivered_total 1$/m);
  });
});
