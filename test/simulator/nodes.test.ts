/**
 * `blockkit sim nodes --mqtt`: MQTT nodes behind a real gateway process (embedded broker) in front
 * of a real server: readings reach the server, commands reach the nodes, and the report holds the
 * end-to-end latencies. `--serial`: the fake firmware node on one end of a socat pty pair answers a
 * version query like the original firmware.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiClient } from "../../protocol/api-client.js";
import { BlockkitServer } from "../../server/controller.js";
import type { NodesReport } from "../../simulator/nodes/mqtt-nodes.js";
import { GatewayProcess } from "../gateway/gateway-process.js";
import { freePort } from "../helpers/process.js";

const TOKEN = "admin-token-0123456789";
const ROOT = join(import.meta.dirname, "..", "..");
const GATEWAY = "GWNODESTEST0001";

function blockkit(args: string[], timeoutMs = 40_000): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "cli/index.ts", ...args], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`did not finish:\n${stderr}`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe("blockkit sim nodes over MQTT", () => {
  let server: BlockkitServer;
  let gateway: GatewayProcess;
  let dir: string;
  let baseUrl: string;
  let mqttPort: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-sim-nodes-"));
    server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: join(dir, "data"), adminToken: TOKEN, logger: pino({ level: "silent" }), pollHoldSeconds: 5 });
    baseUrl = (await server.start()).baseUrl;
    mqttPort = await freePort();
    gateway = new GatewayProcess(
      ["--server", baseUrl, "--node-id", GATEWAY, "--user-token", TOKEN, "--mqtt-listen", String(mqttPort), "--state-dir", join(dir, "gw")],
      await freePort(),
    );
    await gateway.start();
  }, 40_000);

  afterAll(async () => {
    await gateway?.kill("SIGTERM");
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("publishes on the gateway's topics, answers commands, reports end-to-end latencies", { timeout: 60_000 }, async () => {
    const report = join(dir, "nodes.json");
    const run = await blockkit([
      "sim", "nodes", "--mqtt", `mqtt://127.0.0.1:${mqttPort}`, "--server", baseUrl, "--token", TOKEN, "--gateway-node-id", GATEWAY,
      "--devices", "2", "--rate", "4", "--commands", "2", "--duration", "3", "--report", report,
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/reading -> visible on the server: p50 [\d.]+ p99/);
    const r = JSON.parse(readFileSync(report, "utf8")) as NodesReport;
    expect(r.published).toBeGreaterThan(8);
    expect(r.pubacked).toBe(r.published);
    expect(r.errors).toBe(0);
    expect(r.latency_ms.visible.count).toBeGreaterThan(5);
    expect(r.commands_sent).toBeGreaterThan(1);
    expect(r.latency_ms.command.count).toBeGreaterThan(0);
    const api = new ApiClient({ baseUrl, token: TOKEN });
    const devices = await api.devices();
    expect(Object.keys(devices).filter((g) => g.startsWith(`${GATEWAY}_`)).sort()).toEqual(expect.arrayContaining([`${GATEWAY}_1_0_9`, `${GATEWAY}_2_0_1002`]));
    expect((await api.history(`${GATEWAY}_1_0_9`, { from: 0 })).length).toBeGreaterThan(4);
  });
});

describe.runIf(spawnSync("which", ["socat"]).status === 0)("blockkit sim nodes over a serial line", () => {
  it("runs a fake firmware node on one end of a pty pair, sending DEVICE frames", { timeout: 30_000 }, async () => {
    const { PtyPair } = await import("../gateway/pty.js");
    const { SerialPort } = await import("serialport");
    const where = mkdtempSync(join(tmpdir(), "blockkit-sim-serial-"));
    const pair = new PtyPair(join(where, "gateway"), join(where, "node"));
    await pair.start();
    try {
      const port = new SerialPort({ path: pair.gatewayEnd, baudRate: 9600 });
      let text = "";
      port.on("data", (c: Buffer) => (text += c.toString("latin1")));
      const done = await blockkit(["sim", "nodes", "--serial", pair.firmwareEnd, "--firmware", "V12_1.00", "--devices", "2", "--rate", "5", "--duration", "3"]);
      await new Promise<void>((r) => port.close(() => r()));
      expect(done.code, done.stderr).toBe(0);
      expect(done.stderr).toMatch(/serial node \(V12_1\.00\) on .*: [1-9]\d* readings sent/);
      expect(text).toContain('"DEVICE"');
      expect(text).toMatch(/"D":9/);
    } finally {
      await pair.stop();
      rmSync(where, { recursive: true, force: true });
    }
  });
});
