/**
 * The uplink paces a replayed backlog (UplinkOptions.ratePerSecond) on the agent's clock
 * (BlockAgentOptions.clock, as the activator since 30d1a16), not on Date.now: a cycle's time is
 * read on the clock it was given. Here the timers and Date are fake and never advanced; the injected
 * clock moves as the server "takes" its time per request. A backlog whose requests took as long as
 * the pace asks goes out without a pacing wait; one whose requests took no time waits for the pace.
 * The same through a BlockAgent, which hands its clock to its uplink (agent.ts): the uplink alone
 * would not see that line go.
 */
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BlockAgent } from "../../gateway/agent/agent.js";
import { MemoryOutbox, MemoryTokenStore } from "../../gateway/agent/memory.js";
import type { NewOutboxEntry } from "../../gateway/agent/types.js";
import { Uplink } from "../../gateway/agent/uplink.js";
import type { BlockClient, WireReading } from "../../protocol/block-client.js";

const BATCH = 100;
/** 100 readings a second: a cycle of 100 is paced to last one second. */
const RATE = 100;

describe("the uplink's pacing and the agent's clock", () => {
  let uplink: Uplink | null = null;
  let agent: BlockAgent | null = null;

  beforeEach(() => {
    // setImmediate stays real: the test waits on it for the uplink's turns, with no time passing.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
  });

  afterEach(async () => {
    await uplink?.stop();
    uplink = null;
    await agent?.stop();
    agent = null;
    vi.useRealTimers();
  });

  /**
   * A backlog of three cycles, stamped now on the injected clock (the agent's expiry, 24 h, keeps
   * them); each request moves that clock by `perRequestMs`. The commands poll is held until the stop.
   */
  function backlog(perRequestMs: number): { client: BlockClient; outbox: MemoryOutbox; calls: number[]; clock: () => number } {
    let now = 1_700_000_000_000;
    const calls: number[] = [];
    const client = {
      nodeId: "CLOCKAGENT0001",
      heartbeat: (_t: string, rs: WireReading[]) => {
        calls.push(rs.length);
        now += perRequestMs;
        return Promise.resolve();
      },
      commands: (_t: string, signal: AbortSignal) => new Promise((resolve) => signal.addEventListener("abort", () => resolve([]), { once: true })),
    } as unknown as BlockClient;
    const outbox = new MemoryOutbox();
    const entries: NewOutboxEntry[] = Array.from({ length: 3 * BATCH }, (_v, i) => ({ kind: "heartbeat", G: "1", V: 0, D: 9, DA: String(i), value: null, ts: now, key: `k.${i}` }));
    outbox.append(entries);
    return { client, outbox, calls, clock: () => now };
  }

  /** The backlog through an Uplink given the clock. */
  function throughUplink(perRequestMs: number): { calls: number[] } {
    const { client, outbox, calls, clock } = backlog(perRequestMs);
    uplink = new Uplink(client, outbox, { token: () => "t", acked: () => {}, rejected: () => {}, unauthorized: () => {}, reachable: () => {} }, pino({ level: "silent" }), {
      batchSize: BATCH,
      pipeline: 1,
      ratePerSecond: RATE,
      clock,
    });
    uplink.start();
    uplink.notify();
    return { calls };
  }

  /** The backlog through a BlockAgent given the clock, which it hands to its uplink (a stored token: no activation request). */
  function throughAgent(perRequestMs: number): { calls: number[] } {
    const { client, outbox, calls, clock } = backlog(perRequestMs);
    agent = new BlockAgent({ nodeId: "CLOCKAGENT0001", client, outbox, tokens: new MemoryTokenStore("stored-token"), uplink: { batchSize: BATCH, pipeline: 1, ratePerSecond: RATE }, clock });
    void agent.start();
    return { calls };
  }

  /** Lets the uplink run its turns (real setImmediate, no fake time passing) until `ok` or a bound of turns. */
  async function turns(ok: () => boolean): Promise<void> {
    for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setImmediate(r));
  }

  // Through the agent, the test fails without its `clock: this.clock` for the uplink (agent.ts): the
  // first case then sends [BATCH, BATCH].
  for (const [through, replay] of [["an Uplink", throughUplink], ["a BlockAgent", throughAgent]] as const) {
    it(`sends a backlog whose requests took their paced time on the agent's clock without waiting (${through})`, async () => {
      const { calls } = replay(1000);
      await turns(() => calls.length === 3);
      // Before: the cycle was timed on Date.now (here still), so it "took" 0 ms and waited a second.
      expect(calls).toEqual([BATCH, BATCH, BATCH]);
    });

    it(`waits for the pace when the requests took no time on the agent's clock (${through})`, async () => {
      const { calls } = replay(0);
      await turns(() => calls.length === 3);
      // The first two cycles overlap; the next waits until the pace allows it.
      expect(calls).toEqual([BATCH, BATCH]);
      await vi.advanceTimersByTimeAsync(1000);
      await turns(() => calls.length === 3);
      expect(calls).toEqual([BATCH, BATCH, BATCH]);
    });
  }
});
