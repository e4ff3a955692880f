/**
 * The gateway's lifecycle: a link whose stop throws still lets the broker and the outbox close; a
 * start that fails (the health port in use) closes the outbox before it rejects.
 */
import { readdirSync, readlinkSync, rmSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../gateway/daemon/config.js";
import { Gateway } from "../../gateway/daemon/gateway.js";
import { StartCancelled, StopError } from "../../protocol/lifecycle.js";
import { unreachableServer } from "../helpers/process.js";
import { tempDir } from "./helpers.js";

const dirs: string[] = [];
const busy: Server[] = [];
const unreachable: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const s of busy.splice(0)) await new Promise((done) => s.close(done));
  for (const u of unreachable.splice(0)) await u.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A gateway whose server is unreachable; its listeners on ports the kernel picks unless given. */
async function newGateway(flags: { mqttListen?: number; healthPort?: number }) {
  const stateDir = tempDir("gw-lifecycle");
  dirs.push(stateDir);
  const server = await unreachableServer();
  unreachable.push(server);
  const config = loadConfig({
    flags: { server: server.url, nodeId: "LIFECYCLE0001", stateDir, healthPort: flags.healthPort ?? 0, mqttListen: flags.mqttListen, logLevel: "info" },
    env: {},
  });
  const lines: { msg: string; part?: string; failed?: string[] }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split("\n")) if (l) lines.push(JSON.parse(l) as (typeof lines)[number]);
      done();
    },
  });
  return { gw: new Gateway(config, { logger: pino({ level: "info" }, sink), env: {} }), stateDir, lines };
}

/** Descriptors of this process open on the outbox's files. */
function openOutbox(stateDir: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(join(stateDir, "outbox.db"))) out.push(target);
    } catch {
      // the readdir's own descriptor, closed meanwhile
    }
  }
  return out;
}

const refused = (port: number): Promise<boolean> =>
  new Promise((done) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      done(false);
    });
    s.once("error", () => done(true));
  });

describe("gateway lifecycle", () => {
  it("a link whose stop throws: the broker and the outbox still close, the error is named, `stopped` logged", async () => {
    const { gw, stateDir, lines } = await newGateway({ mqttListen: 0 });
    await gw.start();
    const mqttPort = gw.broker?.port ?? 0;
    expect(mqttPort).toBeGreaterThan(0);
    expect(openOutbox(stateDir).length).toBeGreaterThan(0);
    const link = gw.links[0];
    if (!link) throw new Error("no MQTT link");
    const realStop = link.stop.bind(link);
    // It closes its client (nothing of it outlives the test), then throws.
    vi.spyOn(link, "stop").mockImplementation(async () => {
      await realStop();
      throw new Error("link cannot stop");
    });
    const err = await gw.stop().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StopError);
    expect((err as StopError).parts).toEqual(["link 1"]);
    expect(openOutbox(stateDir)).toEqual([]);
    expect(await refused(mqttPort)).toBe(true);
    expect(lines.find((l) => l.msg === "stopped")).toMatchObject({ failed: ["link 1"] });
  });

  it("a start that fails (health port in use) closes the outbox before it rejects", async () => {
    const taken = createServer();
    busy.push(taken);
    await new Promise<void>((done) => taken.listen(0, "127.0.0.1", done));
    const { gw, stateDir, lines } = await newGateway({ healthPort: (taken.address() as { port: number }).port });
    await expect(gw.start()).rejects.toThrow(/in use|EADDRINUSE/);
    expect(openOutbox(stateDir)).toEqual([]);
    expect(lines.find((l) => l.msg.startsWith("start failed"))).toMatchObject({ part: "health" });
  });

  it("stop() during start cancels it: start() rejects with StartCancelled, the outbox is closed, `stopped` logged", async () => {
    const { gw, stateDir, lines } = await newGateway({ mqttListen: 0 });
    const starting = gw.start();
    await gw.stop();
    await expect(starting).rejects.toBeInstanceOf(StartCancelled);
    await vi.waitFor(() => expect(openOutbox(stateDir)).toEqual([]), { timeout: 5_000 });
    expect(gw.links).toHaveLength(0);
    expect(lines.some((l) => l.msg === "stopped")).toBe(true);
  });
});
