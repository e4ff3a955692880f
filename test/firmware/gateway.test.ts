/**
 * End to end: the built firmware on a simulated ATmega328P <-> `blockkit gateway --serial` on its
 * pseudo-terminal <-> a real server. Opening the port resets the MCU and holds it in its
 * bootloader for half a second, as an Arduino Uno's DTR line does, so the gateway's first version
 * query is lost and the gateway must cope.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, type LiveServer, startLive } from "../helpers/live.js";
import { waitFor } from "../helpers/wait.js";
import { tempDir } from "../gateway/helpers.js";
import { type CliProcess, spawnCli, stopProcess } from "../helpers/process.js";
import { waitForGatewayReady } from "../gateway/gateway-process.js";
import { SimBoard, frame } from "./sim-board.js";

const NODE = `FIRMWARE${randomBytes(4).toString("hex").toUpperCase()}`;
const guid = (D: number): string => `${NODE}_0_0_${D}`;
let srv: LiveServer;
let dir: string;
let board: SimBoard;
let gateway: CliProcess | null = null;

async function startGateway(): Promise<CliProcess> {
  const p = spawnCli(
    [
      "gateway",
      "--server", srv.authUrl,
      "--node-id", NODE,
      "--user-token", ADMIN_TOKEN,
      "--state-dir", join(dir, "state"),
      "--serial", board.pty,
      "--record", join(dir, "frames.jsonl"),
      "--health-port", "0",
    ],
    { BLOCKKIT_LOG_LEVEL: "warn" },
  );
  await waitForGatewayReady(p);
  return p;
}

/** Raw lines the gateway received from the board (its --record file). */
function received(): string[] {
  const file = join(dir, "frames.jsonl");
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => (JSON.parse(l) as { frame: string }).frame);
}

beforeAll(async () => {
  dir = tempDir("firmware-e2e");
  srv = await startLive();
  board = await SimBoard.start({ pty: join(dir, "uart"), a0: 750, resetOnOpen: { bootMs: 500 } });
  gateway = await startGateway();
}, 120_000);

afterAll(async () => {
  if (gateway) await stopProcess(gateway);
  await board?.stop();
  await srv?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("firmware, gateway and server", () => {
  it("the gateway's port open resets the board; its devices and the temperature reach the server", async () => {
    await waitFor("the reset at port open", () => board.events.includes("open") && board.boots() >= 2);
    const h = await waitFor("the temperature on the server", async () => {
      const x = await srv.history(guid(9));
      return x.length > 0 ? x : null;
    }, 15_000);
    expect(h[0]?.v).toBe(25);
    // The version the firmware answered the gateway's query with, on the version device.
    const fw = await waitFor("the firmware version on the server", async () => {
      const r = await srv.user("GET", `/device/${guid(1003)}`);
      return r.status === 200 ? (r.body as { data: { meta: { config: { VERSION: { payload: { DA: string } } } } } }).data : null;
    }, 15_000);
    expect(fw.meta.config.VERSION.payload.DA).toBe("BK_1.0.0");
    for (const D of [5, 1002, 999]) {
      const r = await waitFor(`device ${D}`, async () => {
        const d = await srv.user("GET", `/device/${guid(D)}`);
        return d.status === 200 ? d : null;
      });
      expect(JSON.stringify(r.body)).toContain('"plugged":true');
    }
  });

  it("a PUT on the relay reaches the firmware (D7 on) and the firmware ACKs it", async () => {
    expect((await srv.user("PUT", `/device/${guid(1002)}`, { DA: "1" })).status).toBe(200);
    await waitFor("D7 high", async () => (await board.state()).d7 === 1, 15_000);
    await waitFor("the relay's ACK at the gateway", () => received().includes(frame("ACK", 1002, "1")));
  });

  it("a button press is a data event that fires a rule, whose command lights the LED green", async () => {
    const rule = await srv.user("POST", "/rule", {
      shortName: "Button to green",
      preconditions: [{ handler: "serviceChange", params: { guid: guid(5), to: "1" } }],
      actions: [{ handler: "serviceSendCommand", params: { guid: guid(999), da: "00FF00" } }],
    });
    expect(rule.status).toBe(200);
    await board.driveButton([0, 2, 1, 3, 0]);
    await waitFor("the press stored", async () => (await srv.history(guid(5))).some((p) => String(p.v) === "1"));
    await waitFor("the LED green", async () => {
      const s = await board.state();
      return s.d9 === 0 && s.d10 === 255 && s.d11 === 0 && s.d13 === 1;
    }, 15_000);
    await waitFor("the LED's ACK at the gateway", () => received().includes(frame("ACK", 999, "00FF00")));
    await board.driveButton([1]);
  });

  it("a gateway restart (another port open, another reset) finds the board again", async () => {
    const boots = board.boots();
    const plugins = (): number => received().filter((l) => l === frame("PLUGIN", 1002)).length;
    const pluginsBefore = plugins();
    if (gateway) await stopProcess(gateway);
    gateway = await startGateway();
    await waitFor("the reset at the new port open", () => board.boots() > boots);
    // The gateway routes commands to the devices it has seen: the fresh firmware announces them.
    await waitFor("the relay announced to the new gateway", () => plugins() > pluginsBefore, 15_000);
    // The reset turned the relay off; the gateway carries the next command to the fresh firmware.
    expect((await board.state()).d7).toBe(0);
    expect((await srv.user("PUT", `/device/${guid(1002)}`, { DA: "1" })).status).toBe(200);
    await waitFor("D7 high again", async () => (await board.state()).d7 === 1, 15_000);
    await waitFor("the second relay ACK at the gateway", () => received().filter((l) => l === frame("ACK", 1002, "1")).length >= 2);
  });
});
