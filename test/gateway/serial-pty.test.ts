/**
 * The serial link on a real pseudo-terminal pair (socat) with a fake firmware on the other end:
 * readings reach a real server, commands reach the firmware, and the link survives the port
 * vanishing and coming back at the same path.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockAgent } from "../../gateway/agent/agent.js";
import { MemoryOutbox, MemoryTokenStore } from "../../gateway/agent/memory.js";
import { SerialLink } from "../../gateway/links/serial.js";
import { ADMIN, type LiveServer, startLiveServer, tempDir, waitFor } from "./helpers.js";
import { FakeFirmware, PtyPair } from "./pty.js";

const NODE = "SERIALPTY0001";
let srv: LiveServer;
let dir: string;
let pty: PtyPair;
let firmware: FakeFirmware;
let agent: BlockAgent;
let link: SerialLink;

beforeAll(async () => {
  srv = await startLiveServer();
  dir = tempDir("pty");
  pty = new PtyPair(join(dir, "gw"), join(dir, "fw"));
  await pty.start();
  firmware = new FakeFirmware(join(dir, "fw"));
  await firmware.open();
  agent = new BlockAgent({ nodeId: NODE, baseUrl: srv.baseUrl, outbox: new MemoryOutbox(), tokens: new MemoryTokenStore(), userToken: ADMIN });
  link = new SerialLink({ path: join(dir, "gw"), sink: agent, reopen: { baseMs: 100, maxMs: 400 } });
  agent.addLink(link);
  await agent.start();
  await link.start();
});

afterAll(async () => {
  await link?.stop();
  await agent?.stop();
  await agent?.client.close();
  await firmware?.close();
  await pty?.stop();
  await srv?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("serial link on a pty pair", () => {
  it("reports the firmware version and carries readings to the server", async () => {
    await waitFor("firmware version", () => link.firmwareVersion === "V12_1.00");
    firmware.send({ kind: "DEVICE", devices: [{ G: "1", V: 0, D: 9, DA: "21.5" }] });
    firmware.raw("line noise\r\n");
    firmware.send({ kind: "DEVICE", devices: [{ G: "1", V: 0, D: 9, DA: "21.7" }, { G: "2", V: 0, D: 1002, DA: "0" }] });
    firmware.send({ kind: "PLUGIN", devices: [{ G: "3", V: 0, D: 5 }] });
    const h = await waitFor("readings stored", async () => {
      const x = await srv.history(`${NODE}_1_0_9`);
      return x.length === 2 ? x : null;
    });
    expect(h.map((p) => p.v)).toEqual([21.5, 21.7]);
    await waitFor("garbage counted", () => link.counters().garbage === 1);
    const fw = await waitFor("firmware device meta", async () => {
      const r = await srv.user("GET", `/device/${NODE}_0_0_1003`);
      return r.status === 200 ? (r.body as { data: { meta?: { config?: Record<string, unknown> } } }).data : null;
    });
    expect(JSON.stringify(fw)).toContain("VERSION");
    const button = await srv.user("GET", `/device/${NODE}_3_0_5`);
    expect(JSON.stringify(button.body)).toContain('"plugged":true');
  });

  it("delivers commands to the firmware one at a time, and logs firmware errors", async () => {
    expect((await srv.user("PUT", `/device/${NODE}_2_0_1002`, { DA: "1" })).status).toBe(200);
    await waitFor("command at the firmware", () => firmware.commands.some((c) => c.D === 1002 && c.DA === "1"));
    await waitFor("command acknowledged", () => link.counters().commandsAcked >= 2); // version query + relay
    expect(agent.stats().commandsDelivered).toBe(1);
    // D 4242 is unknown to the firmware: ERROR 3 ends that command at once, not after the 2 s timeout.
    const t0 = Date.now();
    await expect(link.deliver({ G: "2", V: 0, D: 4242, DA: "1", GUID: "" })).rejects.toThrow(/ERROR 3: the firmware does not know/);
    expect(Date.now() - t0).toBeLessThan(1500);
    expect(link.counters().firmwareErrors).toBe(1);
  });

  it("marks the port down when it vanishes and recovers when it returns", async () => {
    await firmware.close();
    await pty.stop();
    await waitFor("link down", () => link.state !== "up", 5000);
    await pty.start();
    firmware = new FakeFirmware(join(dir, "fw"), "V12_1.01");
    await firmware.open();
    await waitFor("link up again", () => link.state === "up", 10_000);
    // The link asks again every 2 s while unanswered: a firmware that opened late still answers.
    await waitFor("new firmware version", () => link.firmwareVersion === "V12_1.01", 15_000);
    firmware.send({ kind: "DEVICE", devices: [{ G: "1", V: 0, D: 9, DA: "22.1" }] });
    await waitFor("reading after reconnect", async () => (await srv.history(`${NODE}_1_0_9`)).length === 3);
    expect(link.counters().disconnects).toBeGreaterThanOrEqual(1);
  });
});
