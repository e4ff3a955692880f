/**
 * Gateway benchmarks (standalone: `npm run bench gateway`), each against a baseline run beside it:
 * 1. reading -> server acknowledgement latency through the MQTT link (embedded broker) and the
 *    serial link (a socat pty pair), p50/p99, against a direct HTTP data post from this process;
 * 2. replay of 100,000 buffered readings, readings/s, against the server's own ingest figure
 *    (concurrent 1000-reading heartbeat posts);
 * 3. the gateway process: startup time, RSS idle and under 100 readings/s.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mqtt from "mqtt";
import pino from "pino";
import { SerialPort } from "serialport";
import { request } from "undici";
import { BlockAgent } from "../gateway/agent/agent.js";
import { MemoryTokenStore } from "../gateway/agent/memory.js";
import { SqliteOutbox } from "../gateway/agent/sqlite-outbox.js";
import { MqttLink } from "../gateway/links/mqtt.js";
import { EmbeddedBroker } from "../gateway/links/mqtt-broker.js";
import { SerialLink } from "../gateway/links/serial.js";
import { BlockClient } from "../protocol/block-client.js";
import { BlockkitServer } from "../server/controller.js";
import { startServer } from "./fixtures/procs.js";
import { figure, machine, percentile } from "./lib.js";

const ADMIN = "bench-admin-token-0123456789";
const dir = mkdtempSync(join(tmpdir(), "blockkit-gw-bench-"));
const server = new BlockkitServer({ dataDir: join(dir, "srv"), port: 0, streamPort: 0, adminToken: ADMIN, logger: pino({ level: "silent" }), rateLimitPerSecond: 0 });
const started = await server.start();
const base = started.baseUrl;
const wait = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
let nodeSeq = 0;
const nodeId = (): string => `BENCHGW${String(++nodeSeq).padStart(6, "0")}`;

async function activate(id: string, baseUrl = base): Promise<string> {
  const token = await new BlockClient({ baseUrl, nodeId: id }).activate({ userToken: ADMIN });
  if (!token) throw new Error("activation failed");
  return token;
}

async function newAgent(outbox = new SqliteOutbox(join(dir, `${nodeSeq + 1}.db`)), baseUrl = base): Promise<BlockAgent> {
  const id = nodeId();
  const agent = new BlockAgent({ nodeId: id, baseUrl, outbox, tokens: new MemoryTokenStore(await activate(id, baseUrl)), uplink: { ratePerSecond: 0 } });
  return agent;
}

/** Times `n` sequential round trips of `once`, ms. */
async function timeEach(n: number, once: (i: number) => Promise<void>): Promise<number[]> {
  for (let i = 0; i < 20; i++) await once(-1 - i); // warm-up
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await once(i);
    out.push(performance.now() - t);
  }
  return out.sort((a, b) => a - b);
}

function nextAck(agent: BlockAgent): Promise<void> {
  return new Promise((r) => agent.once("acked", () => r()));
}

process.stdout.write(`machine: ${machine()}\n`);
/** `BENCH_ONLY=latency|replay|process` runs one part. */
const only = process.env.BENCH_ONLY;
const runs = (part: string): boolean => !only || only === part;
const N = 400;

// 1. Latency. Baseline: a direct POST /data from this process.
if (runs("latency")) {
  const id = nodeId();
  const client = new BlockClient({ baseUrl: base, nodeId: id });
  const token = await activate(id);
  const direct = await timeEach(N, (i) => client.data(token, { G: "1", V: 0, D: 9, DA: String(i) }));
  await client.close();
  const p99base = { name: "direct post p99", value: percentile(direct, 99) };
  figure("direct HTTP data post p50", percentile(direct, 50), "ms");
  figure("direct HTTP data post p99", percentile(direct, 99), "ms");

  const broker = new EmbeddedBroker({ port: 0, host: "127.0.0.1" });
  await broker.start();
  const agent = await newAgent();
  const link = new MqttLink({ url: broker.url, sink: agent });
  agent.addLink(link);
  await agent.start();
  await link.start();
  while (link.state !== "up") await wait(10);
  const node = await mqtt.connectAsync(broker.url);
  const viaMqtt = await timeEach(N, async (i) => {
    const acked = nextAck(agent);
    node.publish("blockkit/1_0_9/data", String(i), { qos: 0 });
    await acked;
  });
  figure("MQTT reading -> server ack p50", percentile(viaMqtt, 50), "ms", { name: "direct post p50", value: percentile(direct, 50) });
  figure("MQTT reading -> server ack p99", percentile(viaMqtt, 99), "ms", p99base);
  await node.endAsync();
  await link.stop();
  await agent.stop();
  await broker.stop();

  if (spawnSync("socat", ["-V"]).status === 0) {
    const a = join(dir, "gw-pty");
    const b = join(dir, "fw-pty");
    const socat = spawn("socat", [`pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], { stdio: "ignore" });
    while (!existsSync(a) || !existsSync(b)) await wait(10);
    const fw = new SerialPort({ path: b, baudRate: 9600 });
    await new Promise((r) => fw.once("open", r));
    const sAgent = await newAgent();
    const serial = new SerialLink({ path: a, sink: sAgent });
    await sAgent.start();
    await serial.start();
    while (serial.state !== "up") await wait(10);
    const viaSerial = await timeEach(N, async (i) => {
      const acked = nextAck(sAgent);
      fw.write(`{"DEVICE":[{"G":"1","V":0,"D":9,"DA":"${i}"}]}\r\n`);
      await acked;
    });
    figure("serial reading -> server ack p50", percentile(viaSerial, 50), "ms", { name: "direct post p50", value: percentile(direct, 50) });
    figure("serial reading -> server ack p99", percentile(viaSerial, 99), "ms", p99base);
    await serial.stop();
    await sAgent.stop();
    await new Promise((r) => fw.close(r));
    socat.kill();
  } else process.stdout.write("serial latency: skipped (socat missing)\n");
}

// 2. Replay of 100,000 buffered readings against the server's own ingest figure. The server runs as
// a process of its own (the built CLI), as it does beside a gateway: the baseline's client and the
// replaying agent share this process, the server shares neither's event loop.
if (runs("replay")) {
  const total = 100_000;
  const srv = await startServer(join(dir, "replay-srv"), ADMIN);
  const replayBase = `http://127.0.0.1:${srv.port}/rest/v0`;
  const id = nodeId();
  const client = new BlockClient({ baseUrl: replayBase, nodeId: id });
  const token = await activate(id, replayBase);
  const batch = Array.from({ length: 1000 }, (_, i) => ({ G: "1", V: 0, D: 9, DA: String(i) }));
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < total) {
        next += 1000;
        await client.heartbeat(token, batch);
      }
    }),
  );
  const ingest = total / ((performance.now() - t0) / 1000);
  await client.close();
  figure("server ingest (8 concurrent 1000-reading heartbeats)", Math.round(ingest), "readings/s");

  const outbox = new SqliteOutbox(join(dir, "replay.db"), { sync: "normal" });
  const now = Date.now() - 3_600_000;
  for (let i = 0; i < total; i += 10_000) {
    outbox.append(Array.from({ length: 10_000 }, (_, j) => ({ kind: "data" as const, G: String((i + j) % 8), V: 0, D: 9, DA: String(i + j), value: null, ts: now + i + j, key: `r-${i + j}` })));
  }
  const agent = await newAgent(outbox, replayBase);
  const t1 = performance.now();
  await agent.start();
  while (outbox.stats().rows > 0) await wait(5);
  const replay = total / ((performance.now() - t1) / 1000);
  figure("gateway replay of 100,000 buffered readings", Math.round(replay), "readings/s", { name: "server ingest", value: ingest });
  await agent.stop();
  outbox.close();
  await srv.stop();
}

// 3. The gateway process: startup, RSS idle and under 100 readings/s.
if (runs("process")) {
  const rss = (pid: number): number => {
    const r = spawnSync("ps", ["-o", "rss=", "-p", String(pid)], { encoding: "utf8" });
    return Number(r.stdout.trim()) / 1024;
  };
  // The production build, as systemd runs it (tsx alone costs tens of MB); rebuilt so it is current.
  process.stdout.write("building dist/ (npm run build) for the process figures…\n");
  spawnSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" });
  const t0 = performance.now();
  // The node flags of gateway/systemd/blockkit-gateway.service.
  const child = spawn(process.execPath, ["--max-semi-space-size=2", "dist/cli/index.js", "gateway", "--server", started.authUrl, "--node-id", nodeId(), "--user-token", ADMIN,
    "--state-dir", join(dir, "gw-state"), "--mqtt-listen", "0", "--health-port", "0", "--log-level", "warn"], { stdio: ["ignore", "pipe", "inherit"] });
  // Ports the kernel picked (0), from the ready line: ports found free beforehand could be taken before the gateway bound them.
  const ready = await new Promise<RegExpExecArray>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
      const m = /ready .* health http:\/\/[^\s/]+:(\d+) mqtt mqtt:\/\/[^\s/]+:(\d+)/.exec(out);
      if (m) resolve(m);
    });
    child.once("exit", (code) => reject(new Error(`the gateway exited with ${code} before it was ready: ${out}`)));
  });
  const health = Number(ready[1]);
  const mqttPort = Number(ready[2]);
  figure("gateway startup (spawn to ready, dist/)", Math.round(performance.now() - t0), "ms");
  await wait(3000);
  figure("gateway RSS idle", Math.round(rss(child.pid as number)), "MB");
  const node = await mqtt.connectAsync(`mqtt://127.0.0.1:${mqttPort}`);
  let peak = 0;
  const t1 = Date.now();
  let i = 0;
  while (Date.now() - t1 < 10_000) {
    for (let k = 0; k < 10; k++) node.publish(`blockkit/${k}_0_9/data`, String(i++), { qos: 1 });
    await wait(100);
    peak = Math.max(peak, rss(child.pid as number));
  }
  figure("gateway RSS under 100 readings/s (peak over 10 s)", Math.round(peak), "MB");
  const res = await request(`http://127.0.0.1:${health}/healthz`);
  process.stdout.write(`gateway health after load: ${await res.body.text()}`);
  await node.endAsync();
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
}

await server.stop();
rmSync(dir, { recursive: true, force: true });
