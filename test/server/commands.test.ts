/** Commands: queue, batch delivery, long-poll wake-up, TTL expiry, removal once written, newer poll wins. */
import { connect } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { OK, asBlock, asUser, freshNode } from "../helpers/core.js";
import { waitFor } from "../helpers/wait.js";
import { type TestServer, startTestServer } from "../helpers/server.js";

describe("commands", () => {
  let t: TestServer;
  let bt: string;
  let now = Date.now();
  let NODE = "";
  let RELAY = "";
  let LED = "";
  /** Servers shared by the tests that ask for the same options; each test has its own node. */
  const servers = new Map<string, Promise<TestServer>>();

  async function setup(options: { pollHoldSeconds: number; fakeClock?: boolean }): Promise<void> {
    const key = JSON.stringify(options);
    let s = servers.get(key);
    if (!s) {
      s = startTestServer({ pollHoldSeconds: options.pollHoldSeconds, ...(options.fakeClock ? { commandTtlSeconds: 60, clock: () => now } : {}) });
      servers.set(key, s);
    }
    t = await s;
    NODE = freshNode("COMMANDS");
    RELAY = `${NODE}_0_0_1002`;
    LED = `${NODE}_0_0_1000`;
    bt = await t.activate(NODE);
    await asBlock(t, NODE, bt, "heartbeat", [
      { G: "0", V: 0, D: 1002, DA: "0" },
      { G: "0", V: 0, D: 1000, DA: "000000" },
    ]);
  }
  const poll = () => asBlock<{ DEVICE: unknown[] }>(t, NODE, bt, "commands");
  const put = (guid: string, DA: string) => asUser(t, "PUT", `/device/${guid}`, { DA });

  afterAll(async () => {
    for (const s of servers.values()) await (await s).close();
  });

  it("delivers every queued command in one batch, in order, and only once", async () => {
    await setup({ pollHoldSeconds: 5 });
    await put(RELAY, "1");
    await put(LED, "FF0000");
    await put(RELAY, "0");
    const started = Date.now();
    const first = await poll();
    expect(Date.now() - started).toBeLessThan(3000); // answered at once, not after the 5 s hold
    expect(first.body).toEqual({
      DEVICE: [
        { G: "0", V: 0, D: 1002, DA: "1", GUID: RELAY },
        { G: "0", V: 0, D: 1000, DA: "FF0000", GUID: LED },
        { G: "0", V: 0, D: 1002, DA: "0", GUID: RELAY },
      ],
    });
    // Delivered once: the next batch carries only what came after.
    await put(LED, "0000FF");
    expect((await poll()).body).toEqual({ DEVICE: [{ G: "0", V: 0, D: 1000, DA: "0000FF", GUID: LED }] });
  });

  it("a held poll is answered as soon as a command arrives", async () => {
    await setup({ pollHoldSeconds: 5 });
    const held = poll();
    await waitFor("the poll being held", () => t.server.services.commands.heldPolls === 1, 2000);
    const started = Date.now();
    expect((await put(RELAY, "1")).body).toEqual(OK);
    expect((await held).body).toEqual({ DEVICE: [{ G: "0", V: 0, D: 1002, DA: "1", GUID: RELAY }] });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("an empty hold answers {DEVICE: []} after --poll-hold", async () => {
    await setup({ pollHoldSeconds: 1 });
    const started = Date.now();
    expect((await poll()).body).toEqual({ DEVICE: [] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it("a command not delivered within its TTL expires instead of actuating late (server clock)", async () => {
    now = Date.now();
    await setup({ pollHoldSeconds: 0.1, fakeClock: true });
    await put(RELAY, "late");
    now += 59_000;
    await put(RELAY, "fresh");
    now += 2_000; // the first is 61 s old, the second 2 s
    expect((await poll()).body).toEqual({ DEVICE: [{ G: "0", V: 0, D: 1002, DA: "fresh", GUID: RELAY }] });
    now += 120_000;
    await put(RELAY, "x");
    now += 60_000; // exactly the TTL: expired
    expect((await poll()).body).toEqual({ DEVICE: [] });
  });

  it("a newer poll for the same node answers the older one with none", async () => {
    await setup({ pollHoldSeconds: 5 });
    const started = Date.now();
    const older = poll();
    await waitFor("the first poll being held", () => t.server.services.commands.heldPolls === 1, 2000);
    const newer = poll();
    expect((await older).body).toEqual({ DEVICE: [] });
    expect(Date.now() - started).toBeLessThan(2000);
    await put(LED, "00FF00");
    expect((await newer).body).toEqual({ DEVICE: [{ G: "0", V: 0, D: 1000, DA: "00FF00", GUID: LED }] });
  });

  it("a command leaves the queue only once delivered(): a poll that was not written leaves it queued", async () => {
    await setup({ pollHoldSeconds: 1 });
    await put(RELAY, "1");
    const hub = t.server.services.commands;
    const rows = await hub.poll(NODE, () => {}, 0);
    expect(rows.map((r) => r.da)).toEqual(["1"]);
    // Still queued while the answer carrying them is on its way, but not handed to another poll.
    expect((await t.server.services.store.commands.pending(NODE, Date.now())).map((r) => r.da)).toEqual(["1"]);
    expect(await hub.poll(NODE, () => {}, 0)).toEqual([]);
    // No response could be written for these rows: they are handed out again.
    hub.lost(rows);
    const again = await hub.poll(NODE, () => {}, 0);
    expect(again.map((r) => r.da)).toEqual(["1"]);
    await hub.delivered(again);
    expect(await hub.poll(NODE, () => {}, 0)).toEqual([]);
  });

  it("a client that gives up a held poll does not take the next command with it (real socket)", async () => {
    await setup({ pollHoldSeconds: 5 });
    if (!t.server.api.server.listening) await t.server.api.listen({ host: "127.0.0.1", port: 0 });
    const address = t.server.api.server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    // A raw socket, so that "the client went away" is exactly a closed TCP connection.
    const socket = connect(port, "127.0.0.1");
    socket.on("error", () => {});
    socket.write(`GET /rest/v0/block/${NODE}/commands HTTP/1.1\r\nHost: localhost\r\nX-Service-Token: ${bt}\r\n\r\n`);
    await waitFor("the poll being held", () => t.server.services.commands.heldPolls === 1, 2000);
    socket.destroy();
    await waitFor("the server noticing the closed poll", () => t.server.services.commands.heldPolls === 0, 2000);
    await put(RELAY, "1");
    expect((await poll()).body).toEqual({ DEVICE: [{ G: "0", V: 0, D: 1002, DA: "1", GUID: RELAY }] });
  });

  it("stopping the server answers a held poll with none", async () => {
    const own = await startTestServer({ pollHoldSeconds: 30 });
    try {
      const node = freshNode("COMMANDS");
      const token = await own.activate(node);
      const held = asBlock<{ DEVICE: unknown[] }>(own, node, token, "commands");
      await waitFor("the poll being held", () => own.server.services.commands.heldPolls === 1, 2000);
      const started = Date.now();
      const stopping = own.server.stop();
      const answer = await held;
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ DEVICE: [] });
      expect(Date.now() - started).toBeLessThan(5000);
      await stopping;
      expect(own.server.services.commands.heldPolls).toBe(0);
    } finally {
      await own.close();
    }
  });

  it("a HEAD on the commands path takes nothing off the queue", async () => {
    await setup({ pollHoldSeconds: 1 });
    await put(RELAY, "1");
    const head = await t.api({ method: "HEAD", url: `/block/${NODE}/commands`, headers: { "x-service-token": bt } });
    expect(head.statusCode).toBe(404);
    expect((await poll()).body).toEqual({ DEVICE: [{ G: "0", V: 0, D: 1002, DA: "1", GUID: RELAY }] });
  });
});
