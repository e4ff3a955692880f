/**
 * The serial link on a real pseudo-terminal pair (socat) against fake nodes that behave like the
 * original firmwares 0.47 and V12_1.00 (simulator/nodes/serial-node.ts): the port open resets the
 * board, the version comes in an ACK, readings reach a real server, commands reach the node, a
 * command the firmware could not read is refused before it is written, and the link is back
 * within 3 s when the port reappears.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockAgent } from "../../gateway/agent/agent.js";
import { MemoryOutbox, MemoryTokenStore } from "../../gateway/agent/memory.js";
import { SerialLink } from "../../gateway/links/serial.js";
import { SerialNodePort } from "../../simulator/nodes/serial-node-port.js";
import type { SerialNodeProfile } from "../../simulator/nodes/serial-node.js";
import { ADMIN_TOKEN, type LiveServer, startLive } from "../helpers/live.js";
import { waitFor } from "../helpers/wait.js";
import { tempDir } from "./helpers.js";
import { PtyPair, dtrBinding } from "./pty.js";

/** The nodes' delays run 10 times faster: deaf 180 ms after a reset, heartbeats every 3 s. */
const SCALE = 0.1;

let srv: LiveServer;
beforeAll(async () => {
  srv = await startLive();
});
afterAll(async () => {
  await srv?.close();
});

const VERSIONS: Record<string, string> = { "0.47": "V12_0.47", "V12_1.00": "V12_1.00" };

describe.each(["0.47", "V12_1.00"] as SerialNodeProfile[])("serial link on a pty pair, firmware %s", (profile) => {
  const NODE = `SERIALPTY${profile.replace(/[^A-Za-z0-9]/g, "")}`.padEnd(14, "0");
  let dir: string;
  let pty: PtyPair;
  let node: SerialNodePort;
  let agent: BlockAgent;
  let link: SerialLink;
  // The node exists before its port appears (so the DTR hook of an early gateway open finds it).
  const newNode = (): SerialNodePort => new SerialNodePort(join(dir, "fw"), { profile, timeScale: SCALE, plugged: [{ G: "3", D: 5 }] });

  beforeAll(async () => {
    dir = tempDir("pty");
    pty = new PtyPair(join(dir, "gw"), join(dir, "fw"));
    await pty.start();
    node = newNode();
    await node.start();
    // Powered long before the gateway starts: its boot frames went to nobody.
    await waitFor("node booted", () => node.node.stats.boots === 1);
    agent = new BlockAgent({ nodeId: NODE, baseUrl: srv.baseUrl, outbox: new MemoryOutbox(), tokens: new MemoryTokenStore(), userToken: ADMIN_TOKEN });
    link = new SerialLink({ path: join(dir, "gw"), sink: agent, binding: dtrBinding(() => node.node), settleMs: 300, reopen: { baseMs: 100, maxMs: 400 } });
    agent.addLink(link);
    await agent.start();
    await link.start();
  });

  afterAll(async () => {
    await link?.stop();
    await agent?.stop();
    await agent?.client.close();
    await node?.stop();
    await pty?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("reads the version from the ACK into the version device's meta, and carries readings and boot frames to the server", async () => {
    await waitFor("firmware version", () => link.firmwareVersion === VERSIONS[profile]);
    node.node.reading("1", 9, "21.5");
    node.raw("line noise\r\n");
    node.node.reading("1", 9, 21.7);
    const h = await waitFor("readings stored", async () => {
      const x = await srv.history(`${NODE}_1_0_9`);
      return x.length === 2 ? x : null;
    });
    expect(h.map((p) => p.v)).toEqual([21.5, 21.7]);
    await waitFor("garbage counted", () => link.counters().garbage === 1);
    // The one documented place: the version device's meta, config.VERSION.payload.DA.
    const fw = await waitFor("firmware device meta", async () => {
      const r = await srv.user("GET", `/device/${NODE}_0_0_1003`);
      return r.status === 200 ? (r.body as { data: { meta: { config: { VERSION: { payload: { DA: string } } } } } }).data : null;
    });
    expect(fw.meta.config.VERSION.payload.DA).toBe(VERSIONS[profile]);
    // The PLUGIN of port 3 at power-up was lost (nobody had the port open); the one after the
    // reset the open caused arrived.
    const button = await waitFor("plugged button", async () => {
      const r = await srv.user("GET", `/device/${NODE}_3_0_5`);
      return r.status === 200 ? r.body : null;
    });
    expect(JSON.stringify(button)).toContain('"plugged":true');
    expect(node.node.stats.framesLost).toBeGreaterThanOrEqual(1);
    // V12_1.00's boot UNPLUGs for the empty ports 1 and 2 created nothing.
    const devices = (await srv.user("GET", "/devices")).body as { data: Record<string, unknown> };
    expect(Object.keys(devices.data).filter((g) => g.startsWith(`${NODE}_1_0_0`) || g.startsWith(`${NODE}_2_0_0`))).toEqual([]);
  });

  it("delivers commands one at a time, refuses a line the firmware cannot read before writing it, and loses none after it", async () => {
    node.node.reading("1", 1002, 0); // the relay reports its state
    await waitFor("relay device", async () => (await srv.user("GET", `/device/${NODE}_1_0_1002`)).status === 200);
    expect((await srv.user("PUT", `/device/${NODE}_1_0_1002`, { DA: "1" })).status).toBe(200);
    await waitFor("relay command at the node", () => node.node.commands.some((c) => c.D === 1002 && String(c.DA) === "1"));
    await waitFor("relay acknowledged", () => agent.stats().commandsDelivered === 1);
    const reads = node.node.stats.reads;
    // 646 bytes on the wire: the measured line that cost three colour commands on 0.47.
    await expect(link.deliver({ G: "0", V: 0, D: 1007, DA: "F".repeat(600), GUID: "" })).rejects.toThrow(/refused: a DA of 600 characters/);
    await expect(link.deliver({ G: "A".repeat(32), V: 0, D: 11, DA: "0".repeat(60), GUID: "" })).rejects.toThrow(/refused: a line of 135 bytes/);
    expect(link.counters().commandsRefused).toBe(2);
    const colours = ["ff0000", "00ff00", "0000ff", "ffffff"];
    await Promise.all(colours.map((DA) => link.deliver({ G: "0", V: 0, D: 1007, DA, GUID: "" })));
    expect(node.node.commands.filter((c) => c.D === 1007).map((c) => String(c.DA).toLowerCase())).toEqual(colours);
    expect(node.node.stats.reads - reads).toBe(4);
  });

  it("does not blame a stray ERROR on the next command", async () => {
    const acked = link.counters().commandsAcked;
    node.raw('{"ERROR":[{"CODE":1}]}\r\n{"ERROR":[{"CODE":1}]}\r\n');
    await waitFor("stray errors seen", () => link.counters().firmwareErrors >= 2);
    await link.deliver({ G: "1", V: 0, D: 1002, DA: "0", GUID: "" });
    expect(link.counters().commandsAcked).toBe(acked + 1);
    if (profile === "0.47") {
      // An unknown D is answered with ERROR 3: that ends the command at once, not after 2 s.
      const t0 = Date.now();
      await expect(link.deliver({ G: "0", V: 0, D: 1000, DA: "FF0000", GUID: "" })).rejects.toThrow(/ERROR 3: the firmware does not know/);
      expect(Date.now() - t0).toBeLessThan(1500);
    }
  });

  it("is back within 3 s when the port reappears", async () => {
    await node.stop();
    await pty.stop();
    await waitFor("link down", () => link.state !== "up", 5000);
    node = newNode();
    await pty.start();
    const back = Date.now();
    await node.start();
    await waitFor("link up again", () => link.state === "up", 5000);
    const reopened = Date.now() - back;
    node.node.reading("1", 9, "22.1");
    await waitFor("reading after reconnect", async () => (await srv.history(`${NODE}_1_0_9`)).length === 3);
    expect(reopened).toBeLessThan(3000);
    expect(link.counters().disconnects).toBeGreaterThanOrEqual(1);
  });
});
