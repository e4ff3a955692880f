/**
 * The uplink and the commands long-poll on a 429 with Retry-After (activation: activator.test.ts).
 * A real HTTP peer on loopback throttles the first upload and the first poll of a BlockAgent, over
 * the gateway's client and the simulator's: neither asks again before the Retry-After (measured
 * timestamps), the simulator counts both as throttled, not as errors, and the agent never calls the
 * server unreachable. With fake timers and scripted clients: a server answering meanwhile does not
 * cut the Retry-After short, and a huge one is bounded.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { BlockAgent } from "../../gateway/agent/agent.js";
import { Backoff, MAX_RETRY_AFTER_MS } from "../../gateway/agent/backoff.js";
import { MemoryOutbox } from "../../gateway/agent/memory.js";
import { CommandPoller } from "../../gateway/agent/poller.js";
import { Uplink } from "../../gateway/agent/uplink.js";
import type { TokenStore } from "../../gateway/agent/types.js";
import { type BlockClient, BlockClientError } from "../../protocol/block-client.js";
import type { Command } from "../../protocol/payloads.js";
import { SimBlockClient } from "../../simulator/fleet/client.js";
import { fleetTransport } from "../../simulator/fleet/transport.js";

const NODE = "RETRYAFTER0001";
const envelope = JSON.stringify({ result: 1, error: null, id: 0 });
const limited = JSON.stringify({ result: 0, error: "rate limit exceeded for this credential; slow down", id: 0 });

/** Arrivals of one kind of call, and when its 429 was answered (performance.now(), ms). */
interface Seen {
  at: number[];
  throttledAt: number;
}

/** A peer that answers the first upload and the first poll 429 with Retry-After: 1, then 200 (polls are held). */
async function throttlingPeer(): Promise<{ base: string; uplink: Seen; poll: Seen; close(): Promise<void> }> {
  const uplink: Seen = { at: [], throttledAt: 0 };
  const poll: Seen = { at: [], throttledAt: 0 };
  const answer = (req: IncomingMessage, res: ServerResponse): void => {
    const seen = req.url?.endsWith("/commands") ? poll : uplink;
    seen.at.push(performance.now());
    if (seen.at.length === 1) {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "1" }).end(limited, () => {
        seen.throttledAt = performance.now();
      });
    } else if (seen === uplink) res.writeHead(200, { "content-type": "application/json" }).end(envelope);
    // A later poll is held until the agent stops (it aborts it) or the peer closes.
  };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => answer(req, res));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rest/v0`,
    uplink,
    poll,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

const storedToken = (): TokenStore => ({ load: () => Promise.resolve("block-token"), save: () => Promise.resolve(), clear: () => Promise.resolve() });

describe.each(["gateway", "simulator"] as const)("a BlockAgent with the %s's client on a 429 with Retry-After", (kind) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("sends the reading again and polls again only after the Retry-After; the simulator counts both as throttled", { timeout: 15_000 }, async () => {
    const peer = await throttlingPeer();
    cleanups.push(peer.close);
    const errors: string[] = [];
    const throttled: string[] = [];
    let client: BlockClient | undefined;
    if (kind === "simulator") {
      const http = fleetTransport(4, 1);
      cleanups.push(http.close);
      client = new SimBlockClient({ baseUrl: peer.base, nodeId: NODE, transport: http.transport }, { error: (k) => errors.push(k), throttled: (k) => throttled.push(k) });
    }
    const acked: number[] = [];
    const agent = new BlockAgent({
      nodeId: NODE,
      baseUrl: peer.base,
      client,
      outbox: new MemoryOutbox(),
      tokens: storedToken(),
      // No jitter: on their own, the backoffs would ask again at once.
      backoff: { random: () => 0 },
      ...(kind === "simulator" ? { lean: { acked: (ts: number) => void acked.push(ts) } } : {}),
    });
    cleanups.push(() => agent.stop());
    await agent.start();
    await vi.waitFor(() => expect(agent.stats().activations).toBe(1), { timeout: 5000 });
    const reading = { G: "1", V: 0, D: 9, DA: "21.5" };
    // The simulator's blocks send a lone reading unstored (the lean path); a failure stores it.
    expect(kind === "simulator" ? agent.submitLean(reading) : agent.submit(reading)).toBe(true);
    await vi.waitFor(() => expect(agent.stats().acked).toBe(1), { timeout: 5000 });
    await vi.waitFor(() => expect(peer.poll.at).toHaveLength(2), { timeout: 5000 });
    for (const seen of [peer.uplink, peer.poll]) {
      expect(seen.at).toHaveLength(2);
      const waited = (seen.at[1] as number) - seen.throttledAt;
      // Not before the Retry-After (a timer may fire up to a millisecond early on the loop's clock), and not much after.
      expect(waited).toBeGreaterThanOrEqual(995);
      expect(waited).toBeLessThan(4000);
    }
    // A 429 is an answer: the agent never took the server for unreachable.
    expect(agent.stats()).toMatchObject({ state: "online", reconnects: 0, rejected: 0, outboxRows: 0 });
    if (kind === "simulator") {
      expect(throttled.sort()).toEqual(["poll", "uplink"]);
      expect(errors).toEqual([]);
    }
  });
});

const throttledError = (retryAfterMs: number | null): BlockClientError => new BlockClientError("answered 429: rate limit exceeded", 429, { retryAfterMs });

describe("the Retry-After wait (fake timers)", () => {
  afterEach(() => vi.useRealTimers());

  /** An uplink whose calls answer in turn from `answers` (an error rejects), recording when each came. */
  function uplinkOn(answers: (BlockClientError | null)[]) {
    const calls: number[] = [];
    const call = (): Promise<void> => {
      calls.push(Date.now());
      const a = answers.shift();
      return a ? Promise.reject(a) : Promise.resolve();
    };
    const client = { data: call, heartbeat: call, config: call } as unknown as BlockClient;
    const outbox = new MemoryOutbox();
    const reach: boolean[] = [];
    const u = new Uplink(client, outbox, { token: () => "t", acked: () => {}, rejected: () => {}, unauthorized: () => {}, reachable: (up) => void reach.push(up) }, pino({ level: "silent" }), {
      backoff: new Backoff({ random: () => 0.5 }),
    });
    u.start();
    outbox.append([{ kind: "data", G: "1", V: 0, D: 9, DA: "1", value: null, ts: Date.now(), key: "k.1" }]);
    u.notify();
    return { u, calls, outbox, reach };
  }

  /** A poller whose polls answer in turn from `answers`, then hold until it stops. */
  function pollerOn(answers: BlockClientError[]) {
    const calls: number[] = [];
    const reach: boolean[] = [];
    const client = {
      nodeId: NODE,
      commands: (_t: string, signal?: AbortSignal) => {
        calls.push(Date.now());
        const a = answers.shift();
        return a ? Promise.reject(a) : new Promise<Command[]>((_r, reject) => signal?.addEventListener("abort", () => reject(new Error("aborted"))));
      },
    } as unknown as BlockClient;
    const p = new CommandPoller(client, { token: () => "t", route: async () => {}, unauthorized: () => {}, reachable: (up) => void reach.push(up) }, pino({ level: "silent" }), new Backoff({ random: () => 0.5 }));
    p.start();
    return { p, calls, reach };
  }

  // The backoffs' jitter is half their ceiling: 500 ms after a first failure, 1 000 after a second.
  it("uplink: waits the Retry-After plus the jitter, not cut short by retryNow(); a 429 without one, the backoff alone", async () => {
    vi.useFakeTimers({ now: 0 });
    const t = uplinkOn([throttledError(3000), throttledError(null)]);
    await vi.advanceTimersByTimeAsync(100);
    t.u.retryNow(); // the server reached meanwhile (by the poller)
    await vi.advanceTimersByTimeAsync(3399);
    expect(t.calls).toEqual([0]);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.calls).toEqual([0, 3500]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(t.calls).toEqual([0, 3500, 4500]);
    expect(t.outbox.rows).toBe(0);
    expect(t.reach).toEqual([true, true, true]);
    await t.u.stop();
  });

  it("uplink: a huge Retry-After is bounded, and stop() ends the wait at once", async () => {
    vi.useFakeTimers({ now: 0 });
    const t = uplinkOn([throttledError(86_400_000), throttledError(86_400_000)]);
    await vi.advanceTimersByTimeAsync(MAX_RETRY_AFTER_MS + 499);
    expect(t.calls).toEqual([0]);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.calls).toEqual([0, MAX_RETRY_AFTER_MS + 500]);
    const stopped = t.u.stop();
    await vi.advanceTimersByTimeAsync(0);
    await stopped;
    expect(t.outbox.rows).toBe(1);
  });

  it("poller: waits the Retry-After, not cut short by retryNow(), and a huge one is bounded", async () => {
    vi.useFakeTimers({ now: 0 });
    const t = pollerOn([throttledError(2000), throttledError(86_400_000)]);
    await vi.advanceTimersByTimeAsync(100);
    t.p.retryNow();
    await vi.advanceTimersByTimeAsync(2399);
    expect(t.calls).toEqual([0]);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.calls).toEqual([0, 2500]);
    await vi.advanceTimersByTimeAsync(MAX_RETRY_AFTER_MS + 999);
    expect(t.calls).toEqual([0, 2500]);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.calls).toEqual([0, 2500, 2500 + MAX_RETRY_AFTER_MS + 1000]);
    expect(t.reach).toEqual([true, true]);
    await t.p.stop();
  });
});
