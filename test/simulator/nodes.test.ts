/**
 * `blockkit sim nodes --mqtt`: MQTT nodes behind a real gateway process (embedded broker) in front
 * of a real server: readings reach the server, commands reach the nodes, and the report holds the
 * end-to-end latencies. `--serial`: the fake firmware node on one end of a socat pty pair answers a
 * version query like the original firmware; `--serial` without a path creates the pair itself and
 * a real gateway process on the printed end carries its readings to the server and a command back.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ApiClient } from "../../protocol/api-client.js";
import { BlockkitServer } from "../../server/controller.js";
import type { NodesReport } from "../../simulator/nodes/mqtt-nodes.js";
import { GatewayProcess } from "../gateway/gateway-process.js";

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

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-sim-nodes-"));
    server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: join(dir, "data"), adminToken: TOKEN, logger: pino({ level: "silent" }), pollHoldSeconds: 5 });
    baseUrl = (await server.start()).baseUrl;
    // The embedded broker on a port the kernel picks, named in the gateway's ready line.
    gateway = new GatewayProcess(["--server", baseUrl, "--node-id", GATEWAY, "--user-token", TOKEN, "--mqtt-listen", "0", "--state-dir", join(dir, "gw")]);
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
      "sim", "nodes", "--mqtt", gateway.mqttUrl, "--server", baseUrl, "--token", TOKEN, "--gateway-node-id", GATEWAY,
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

  it("creates its own pseudo-terminal pair, prints the gateway's end, and a real gateway on it carries readings up and a command down, timed end to end", { timeout: 60_000 }, async () => {
    const where = mkdtempSync(join(tmpdir(), "blockkit-sim-pty-"));
    const server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: join(where, "data"), adminToken: TOKEN, logger: pino({ level: "silent" }), pollHoldSeconds: 5 });
    const baseUrl = (await server.start()).baseUrl;
    const GW = "GWPTYSELFMADE01";
    const node = spawn(
      process.execPath,
      ["--import", "tsx", "cli/index.ts", "sim", "nodes", "--serial", "--pty-link", join(where, "gw-end"), "--firmware", "V12_1.00", "--devices", "2", "--rate", "5", "--duration", "50",
        "--server", baseUrl, "--token", TOKEN, "--gateway-node-id", GW, "--commands", "2"],
      { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stderr = "";
    node.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
    const exited = once(node, "exit");
    let gateway: GatewayProcess | null = null;
    try {
      const [path] = (await Promise.race([
        once(createInterface({ input: node.stdout as NodeJS.ReadableStream }), "line"),
        exited.then(() => Promise.reject(new Error(`sim nodes ended:\n${stderr}`))),
      ])) as [string];
      expect(path).toBe(join(where, "gw-end"));
      expect(existsSync(path)).toBe(true);
      await vi.waitFor(() => expect(stderr).toMatch(/pseudo-terminal pair: the node is on \/dev\/pts\/\d+; start the gateway with --serial /), { timeout: 5000 });
      gateway = new GatewayProcess(["--server", baseUrl, "--node-id", GW, "--user-token", TOKEN, "--serial", path, "--state-dir", join(where, "gw")]);
      await gateway.start();
      // The node boots only once the gateway opened its end, so its PLUGIN announcements reach it.
      await vi.waitFor(() => expect(stderr).toContain("the gateway opened its end: the node powers up"), { timeout: 10_000 });
      const api = new ApiClient({ baseUrl, token: TOKEN });
      await vi.waitFor(async () => expect((await api.history(`${GW}_1_0_9`, { from: 0 })).length).toBeGreaterThan(2), { timeout: 20_000, interval: 200 });
      await vi.waitFor(async () => expect(Object.keys(await api.devices())).toContain(`${GW}_2_0_1002`), { timeout: 10_000, interval: 200 });
      await api.actuate(`${GW}_2_0_1002`, "1");
      await vi.waitFor(() => expect(stderr).toContain('info: command acted on: G 2 D 1002 DA "1"'), { timeout: 10_000 });
      node.kill("SIGINT");
      const [code] = (await exited) as [number | null];
      expect(code, stderr).toBe(0);
      expect(stderr).toMatch(/serial node \(V12_1\.00\) on \/dev\/pts\/\d+: [1-9]\d* readings sent, [1-9]\d* commands acted on/);
      // Given the server, the latencies over the serial line as over MQTT.
      expect(stderr).toMatch(/commands PUT [1-9]\d*, 0 errors/);
      expect(stderr).toMatch(/reading -> visible on the server: p50 [\d.]+ p99 [\d.]+ max [\d.]+ ms \([1-9]\d*\)/);
      expect(stderr).toMatch(/command -> node: p50 [\d.]+ p99 [\d.]+ max [\d.]+ ms \([1-9]\d*\)/);
      // socat is gone with the node, and its link with it.
      expect(existsSync(path)).toBe(false);
    } finally {
      if (node.exitCode === null && node.signalCode === null) {
        node.kill("SIGKILL");
        await exited;
      }
      await gateway?.kill("SIGTERM");
      await server.stop();
      rmSync(where, { recursive: true, force: true });
    }
  });

  it("without socat, says what to install or to give instead", async () => {
    const { PtyPair } = await import("../../simulator/nodes/pty-pair.js");
    await expect(new PtyPair({ socat: join(tmpdir(), "no-such-socat-here") }).start()).rejects.toThrow(
      "creating a pseudo-terminal pair needs socat (Debian: apt install socat); or give --serial PATH",
    );
    expect(() => new PtyPair({ link: "/tmp/a,b" })).toThrow(/link must be a path without/);
  });
});
