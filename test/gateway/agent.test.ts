/** BlockAgent against a real server on loopback: activation, uplink with KEYs, revocation, commands. */
import { statSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BlockAgent } from "../../gateway/agent/agent.js";
import { MemoryOutbox, MemoryTokenStore } from "../../gateway/agent/memory.js";
import { SqliteOutbox } from "../../gateway/agent/sqlite-outbox.js";
import { FileTokenStore } from "../../gateway/agent/token-file.js";
import type { CommandTarget, Outbox } from "../../gateway/agent/types.js";
import type { Command } from "../../protocol/payloads.js";
import { ADMIN_TOKEN, type LiveServer, startLive } from "../helpers/live.js";
import { waitFor } from "../helpers/wait.js";
import { tempDir } from "./helpers.js";

const NODE = "AGENTTEST0001";
let srv: LiveServer;
let dir: string;
const agents: BlockAgent[] = [];

function agent(opts: Partial<ConstructorParameters<typeof BlockAgent>[0]> = {}): BlockAgent {
  const a = new BlockAgent({
    nodeId: NODE,
    baseUrl: srv.baseUrl,
    streamUrl: srv.streamUrl,
    outbox: new MemoryOutbox(),
    tokens: new MemoryTokenStore(),
    backoff: { baseMs: 20, maxMs: 200 },
    ...opts,
  });
  agents.push(a);
  return a;
}

beforeEach(async () => {
  srv = await startLive();
  dir = tempDir("agent");
});

afterEach(async () => {
  for (const a of agents.splice(0)) {
    await a.stop();
    await a.client.close();
  }
  await srv.close();
  await rm(dir, { recursive: true, force: true });
});

describe("BlockAgent", () => {
  it("activates directly, keeps the token in a 0600 file, and uploads readings in order with their time", async () => {
    const tokens = new FileTokenStore(join(dir, "token"));
    const outbox = new SqliteOutbox(join(dir, "outbox.db"));
    const a = agent({ userToken: ADMIN_TOKEN, tokens, outbox });
    const activated = new Promise((r) => a.once("activated", r));
    await a.start();
    await activated;
    expect(statSync(join(dir, "token")).mode & 0o777).toBe(0o600);
    expect(await tokens.load()).toMatch(/.{16,}/);
    const t0 = Date.now() - 60_000;
    for (let i = 0; i < 20; i++) a.submit({ G: "1", V: 0, D: 9, DA: String(20 + i), ts: t0 + i * 1000 }, "serial");
    const guid = `${NODE}_1_0_9`;
    const points = await waitFor("20 readings stored", async () => {
      const h = await srv.history(guid);
      return h.length === 20 ? h : null;
    });
    expect(points.map((p) => p.v)).toEqual(Array.from({ length: 20 }, (_, i) => 20 + i));
    expect(Date.parse(points[0]?.t.replace("+0000", "Z") ?? "")).toBe(t0);
    await waitFor("outbox drained", () => outbox.stats().rows === 0);
    expect(a.stats().acked).toBe(20);
    expect(a.stats().state).toBe("online");
    outbox.close();
  });

  it("waits for the two-legged claim, then uses the token", async () => {
    const a = agent();
    const activated = new Promise((r) => a.once("activated", r));
    await a.start();
    await waitFor("block awaiting activation", () => srv.server.services.activation.isAwaiting(NODE));
    expect(a.currentState).toBe("activating");
    const claim = await srv.user("POST", "/block", { nodeid: NODE });
    expect(claim.status).toBe(200);
    await activated;
    a.submit({ G: "0", V: 0, D: 2000, DA: "hello" });
    await waitFor("reading stored", async () => (await srv.history(`${NODE}_0_0_2000`)).length === 1);
  });

  it("falls back to waiting for a claim when the user token is refused", async () => {
    const a = agent({ userToken: "not-a-real-user-token" });
    const activated = new Promise((r) => a.once("activated", r));
    await a.start();
    await waitFor("block awaiting activation", () => srv.server.services.activation.isAwaiting(NODE));
    expect((await srv.user("POST", "/block", { nodeid: NODE })).status).toBe(200);
    await activated;
    expect(a.stats().activations).toBe(1);
  });

  it("goes back to activation when its token is revoked, and resumes after a new claim without losing readings", async () => {
    const tokens = new MemoryTokenStore();
    const a = agent({ userToken: ADMIN_TOKEN, tokens });
    const activated = new Promise((r) => a.once("activated", r));
    await a.start();
    await activated;
    a.submit({ G: "1", V: 0, D: 9, DA: "1" });
    await waitFor("first reading", async () => (await srv.history(`${NODE}_1_0_9`)).length === 1);
    // A new direct activation issues a new token, revoking the agent's one.
    const replaced = await srv.user("GET", `/block/${NODE}/activate`);
    expect(replaced.status).toBe(200);
    const revoked = new Promise((r) => a.once("revoked", r));
    const again = new Promise((r) => a.once("activated", r));
    a.submit({ G: "1", V: 0, D: 9, DA: "2" });
    await revoked;
    expect(a.stats().revocations).toBe(1);
    await again; // the user token is still good: direct activation again
    await waitFor("second reading after reactivation", async () => (await srv.history(`${NODE}_1_0_9`)).length === 2);
    expect(a.stats().activations).toBe(2);
  });

  it("routes commands to the link that reported the device, and counts unroutable ones", async () => {
    const got: Command[] = [];
    const link: CommandTarget = { name: "serial", owns: () => false, deliver: async (c) => void got.push(c) };
    const mqttGot: Command[] = [];
    const mqtt: CommandTarget = { name: "mqtt", owns: (c) => c.G === "77", deliver: async (c) => void mqttGot.push(c) };
    const a = agent({ userToken: ADMIN_TOKEN });
    a.addLink(link);
    a.addLink(mqtt);
    const activated = new Promise((r) => a.once("activated", r));
    await a.start();
    await activated;
    a.submit({ G: "1", V: 0, D: 1002, DA: "0" }, "serial");
    a.submit({ G: "77", V: 0, D: 1002, DA: "0" }, "other-name");
    a.submit({ G: "78", V: 0, D: 1002, DA: "0" });
    await waitFor("devices created", async () => (await srv.history(`${NODE}_78_0_1002`)).length === 1);
    expect((await srv.user("PUT", `/device/${NODE}_1_0_1002`, { DA: "1" })).status).toBe(200);
    expect((await srv.user("PUT", `/device/${NODE}_78_0_1002`, { DA: "1" })).status).toBe(200);
    await waitFor("command delivered", () => got.length === 1 && a.stats().commandsUnroutable === 1);
    expect(got[0]).toMatchObject({ G: "1", V: 0, D: 1002, DA: "1", GUID: `${NODE}_1_0_1002` });
    expect(mqttGot).toEqual([]);
  });

  it("drops a reading the server refuses for good and sends the rest", async () => {
    const a = agent({ userToken: ADMIN_TOKEN });
    const rejected = new Promise((r) => a.once("rejected", r));
    const activated = new Promise((r) => a.once("activated", r));
    await a.start();
    await activated;
    // Stamped a year ahead: the server takes it with its own time. DA of 5000 characters is refused.
    a.submitMany([
      { G: "1", V: 0, D: 9, DA: "1" },
      { G: "1", V: 0, D: 9, DA: "2" },
    ]);
    const outboxLike = a as unknown as { outbox: MemoryOutbox };
    outboxLike.outbox.append([{ kind: "heartbeat", G: "1", V: 0, D: 9, DA: "x".repeat(5000), value: null, ts: Date.now(), key: "k-bad" }]);
    a.submit({ G: "1", V: 0, D: 9, DA: "3" });
    await rejected;
    await waitFor("good readings stored", async () => (await srv.history(`${NODE}_1_0_9`)).length === 3);
    expect(a.stats().rejected).toBe(1);
  });

  it("sends a batch again when its acknowledgement was lost, and the server stores it once (KEY)", async () => {
    const inner = new MemoryOutbox();
    let lose = 1;
    const lossy: Outbox = {
      append: (e) => inner.append(e),
      peek: (n, after) => inner.peek(n, after),
      expire: (now) => inner.expire(now),
      stats: () => inner.stats(),
      close: () => inner.close(),
      ack(ids) {
        if (lose-- > 0) return; // as if the gateway died between the answer and the delete
        inner.ack(ids);
      },
    };
    const a = agent({ userToken: ADMIN_TOKEN, outbox: lossy, uplink: { batchSize: 50 } });
    const activated = new Promise((r) => a.once("activated", r));
    a.submitMany(Array.from({ length: 30 }, (_, i) => ({ G: "2", V: 0, D: 9, DA: String(i) })));
    await a.start();
    await activated;
    await waitFor("outbox drained", () => inner.stats().rows === 0);
    expect(a.stats().acked).toBe(60); // acknowledged twice
    const h = await srv.history(`${NODE}_2_0_9`);
    expect(h.map((p) => p.v)).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });

  it("drains a backlog with the next cycle sent while the previous one waits, each reading sent once", async () => {
    const inner = new MemoryOutbox();
    let inFlight = 0;
    let most = 0;
    const sent: string[] = [];
    const a = agent({ userToken: ADMIN_TOKEN, outbox: inner, uplink: { batchSize: 10, pipeline: 2, ratePerSecond: 0 } });
    a.submitMany(Array.from({ length: 200 }, (_, i) => ({ G: "3", V: 0, D: 9, DA: String(i), ts: Date.now() - 200_000 + i * 1000 })));
    // Counts the heartbeats in flight at once on the agent's own client.
    const heartbeat = a.client.heartbeat.bind(a.client);
    a.client.heartbeat = async (token, readings, signal) => {
      inFlight++;
      most = Math.max(most, inFlight);
      for (const r of readings) sent.push(r.DA);
      try {
        return await heartbeat(token, readings, signal);
      } finally {
        inFlight--;
      }
    };
    await a.start();
    await waitFor("outbox drained", () => inner.stats().rows === 0);
    expect(sent).toHaveLength(200);
    expect(new Set(sent).size).toBe(200);
    expect(most).toBeGreaterThan(2); // two cycles of two batches overlapped
    expect(a.stats().acked).toBe(200);
    const h = await srv.history(`${NODE}_3_0_9`);
    expect(h.map((p) => p.v)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it("refuses invalid readings without throwing", () => {
    const a = agent();
    expect(a.submit({ G: "bad port", V: 0, D: 9, DA: "1" })).toBe(false);
    expect(a.submit({ G: "1", V: -1, D: 9, DA: "1" })).toBe(false);
    expect(a.submit({ G: "1", V: 0, D: 9, DA: 5 as unknown as string })).toBe(false);
    expect(a.stats().invalid).toBe(3);
    expect(a.stats().outboxRows).toBe(0);
  });
});
