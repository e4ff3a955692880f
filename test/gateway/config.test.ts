/** Gateway configuration: file (JSON/YAML) + env + flags, defaults, every problem listed, --check. */
import { execFile } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig, serverUrls } from "../../gateway/daemon/config.js";
import { tempDir } from "./helpers.js";

const dir = tempDir("config");
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const run = promisify(execFile);

function problems(f: () => unknown): string[] {
  try {
    f();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("gateway config", () => {
  it("reads YAML, fills defaults and freezes the result", () => {
    const file = join(dir, "ok.yaml");
    writeFileSync(
      file,
      ["server: http://hub.local:8000", "nodeId: PIGATEWAY0001", "serial:", "  - path: /dev/ttyAMA0", "mqtt:", "  listen: 1883", "camera:", "  command: libcamera-still -o -"].join("\n"),
    );
    const c = loadConfig({ file });
    expect(c.serial[0]).toEqual({ path: "/dev/ttyAMA0", baud: 9600, ackTimeoutMs: 2000 });
    expect(c.mqtt).toMatchObject({ listen: 1883, prefix: "blockkit", listenHost: "127.0.0.1" });
    expect(c.outbox).toMatchObject({ maxRows: 1_000_000, sync: "full", batchSize: 1000 });
    expect(c.health).toMatchObject({ port: 9464, host: "127.0.0.1" });
    expect(c.stateDir).toBe("./gateway-state");
    expect(Object.isFrozen(c.serial[0])).toBe(true);
    expect(serverUrls(c)).toEqual({ baseUrl: "http://hub.local:8000/rest/v0", streamUrl: "http://hub.local:8001" });
  });

  it("lists every problem by path and refuses the whole config", () => {
    const file = join(dir, "bad.json");
    writeFileSync(
      file,
      JSON.stringify({
        server: "ftp://nope",
        nodeId: "short",
        serial: [{ baud: -5 }, { path: "/dev/x", match: { vendorId: "2341" } }],
        mqtt: { listen: 1883, url: "mqtt://broker" },
        outbox: { sync: "sometimes" },
        colour: "blue",
      }),
    );
    const p = problems(() => loadConfig({ file }));
    const text = p.join("\n");
    expect(text).toMatch(/^server: /m);
    expect(text).toMatch(/^nodeId: /m);
    expect(text).toMatch(/^serial\.0\.baud: /m);
    expect(text).toMatch(/^outbox\.sync: /m);
    expect(text).toMatch(/colour/);
    // Cross-field rules are checked once the shapes are right.
    const cross = problems(() =>
      loadConfig({
        flags: { server: "http://a:1", nodeId: "PIGATEWAY0001" },
        file: (writeFileSync(join(dir, "x.json"), JSON.stringify({ serial: [{ path: "/a", match: { vendorId: "2341" } }], mqtt: { listen: 1, url: "mqtt://b" } })), join(dir, "x.json")),
      }),
    );
    expect(cross).toEqual([
      "serial.0: give exactly one of path and match",
      "mqtt: give exactly one of listen (embedded broker) and url (external broker)",
    ]);
    expect(problems(() => loadConfig({ file: join(dir, "missing.yaml") }))[0]).toMatch(/cannot be read \(ENOENT\)/);
    writeFileSync(join(dir, "broken.yaml"), "server: [");
    expect(problems(() => loadConfig({ file: join(dir, "broken.yaml") }))[0]).toMatch(/not valid YAML/);
  });

  it("lets BLOCKKIT_* variables override the file and flags override both", () => {
    const file = join(dir, "base.json");
    writeFileSync(file, JSON.stringify({ server: "http://file:8000", nodeId: "FILENODE00001", mqtt: { url: "mqtt://file" } }));
    const env = { BLOCKKIT_SERVER: "http://env:8000", BLOCKKIT_MQTT_LISTEN: "1884", BLOCKKIT_SERIAL: "/dev/ttyUSB0", BLOCKKIT_BAUD: "115200" };
    const c = loadConfig({ file, env, flags: { nodeId: "FLAGNODE00001" } });
    expect(c.server).toBe("http://env:8000");
    expect(c.nodeId).toBe("FLAGNODE00001");
    expect(c.mqtt).toMatchObject({ listen: 1884 });
    expect(c.mqtt?.url).toBeUndefined();
    expect(c.serial[0]).toMatchObject({ path: "/dev/ttyUSB0", baud: 115200 });
    expect(problems(() => loadConfig({ file, env: { BLOCKKIT_HEALTH_PORT: "abc" } }))).toContain('BLOCKKIT_HEALTH_PORT: "abc" is not a whole number');
    // Port 0: the system picks one, and the gateway names it when ready (docs/gateway.md "Ports").
    const zero = loadConfig({ file, env: { BLOCKKIT_MQTT_LISTEN: "0", BLOCKKIT_HEALTH_PORT: "0" } });
    expect([zero.mqtt?.listen, zero.health.port]).toEqual([0, 0]);
  });

  it("`blockkit gateway --check` exits 0 on a good config and 2 listing the problems on a bad one", async () => {
    const [good, bad] = await Promise.all([
      run(process.execPath, ["--import", "tsx", "cli/index.ts", "gateway", "--check", "--server", "http://127.0.0.1:8000", "--node-id", "CHECKNODE0001"]),
      run(process.execPath, ["--import", "tsx", "cli/index.ts", "gateway", "--check", "--server", "http://127.0.0.1:8000", "--node-id", "x"]).then(
      () => null,
        (e: { code: number; stderr: string }) => e,
      ),
    ]);
    expect(good.stdout).toBe("configuration ok\n");
    expect(bad?.code).toBe(2);
    expect(bad?.stderr).toMatch(/nodeId: Expected string to match/);
  });
});
