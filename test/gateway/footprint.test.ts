/**
 * What the running `blockkit gateway` process loads: not undici (about 20 MB of RSS, its
 * WebAssembly HTTP parser; the gateway's block client runs on node:http), nor the server's or the
 * simulator's packages. The real CLI as a child process, with a preload that lists the packages it
 * loaded when it exits.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type CliProcess, spawnCli, stopProcess, unreachableServer } from "../helpers/process.js";
import { waitForGatewayReady } from "./gateway-process.js";
import { tempDir } from "./helpers.js";

let gateway: CliProcess | null = null;
let server: { url: string; close(): Promise<void> } | null = null;
const dirs: string[] = [];

afterEach(async () => {
  if (gateway) await stopProcess(gateway, "SIGKILL").catch(() => undefined);
  gateway = null;
  await server?.close();
  server = null;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("gateway process footprint", () => {
  it("runs its block client and MQTT link without loading undici, the server or the simulator", async () => {
    const dir = tempDir("footprint");
    dirs.push(dir);
    // A server that resets every connection: the agent's first activation goes out through the
    // block client and fails, which is all this test needs to have happened.
    server = await unreachableServer();
    const g = spawnCli(
      ["gateway", "--server", server.url, "--node-id", "FOOTPRINT0001", "--user-token", "not-a-real-token", "--state-dir", join(dir, "state"),
        "--mqtt-listen", "0", "--health-port", "0", "--log-level", "warn"],
      {},
      ["--import", "./test/helpers/loaded-packages.ts"],
    );
    gateway = g;
    await waitForGatewayReady(g);
    await g.waitForErrLine(/ECONNRESET.*activation request failed/, 10_000);
    expect(await stopProcess(g, "SIGTERM")).toBe(0);
    const loaded = (await g.waitForErrLine(/^LOADED_PACKAGES (.*)$/, 1_000))[1]?.split(" ") ?? [];
    // The preload saw the gateway's own packages: the outbox, the logger and the MQTT link.
    expect(loaded).toEqual(expect.arrayContaining(["better-sqlite3", "pino", "mqtt"]));
    for (const heavy of ["undici", "fastify", "react", "pg", "nodemailer"]) expect(loaded).not.toContain(heavy);
  });
});
