/** The command poller's backoff on failures (fake timers, a scripted client) and its reset after health. */
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Backoff } from "../../gateway/agent/backoff.js";
import { CommandPoller } from "../../gateway/agent/poller.js";
import { type BlockClient, BlockClientError } from "../../protocol/block-client.js";
import type { Command } from "../../protocol/payloads.js";

afterEach(() => vi.useRealTimers());

function scriptedClient(answers: (() => Promise<Command[]>)[]): { client: BlockClient; calls: number[] } {
  const calls: number[] = [];
  const client = {
    nodeId: "POLLNODE00001",
    commands: (_token: string, signal?: AbortSignal) => {
      calls.push(Date.now());
      const next = answers.shift();
      // Past the scripted answers, a held poll that ends when the poller stops.
      return next ? next() : new Promise<Command[]>((_r, reject) => signal?.addEventListener("abort", () => reject(new Error("aborted"))));
    },
  } as unknown as BlockClient;
  return { client, calls };
}

describe("CommandPoller", () => {
  it("backs off with full jitter from 1 s doubling on every failure, and routes commands in order", async () => {
    vi.useFakeTimers({ now: 0 });
    const down = (): Promise<Command[]> => Promise.reject(new BlockClientError("ECONNREFUSED", 0));
    const cmd = (DA: string): Command => ({ G: "1", V: 0, D: 1002, DA, GUID: "" });
    const { client, calls } = scriptedClient([down, down, down, down, () => Promise.resolve([cmd("a"), cmd("b")])]);
    const routed: string[] = [];
    const up: boolean[] = [];
    const poller = new CommandPoller(
      client,
      { token: () => "t", route: async (c) => void routed.push(c.DA), unauthorized: () => undefined, reachable: (u) => void up.push(u) },
      pino({ level: "silent" }),
      new Backoff({ random: () => 0.999 }),
    );
    poller.start();
    await vi.advanceTimersByTimeAsync(20_000);
    // Delays just under 1, 2, 4 and 8 s between the failing polls; after the answer, the next poll at once.
    const gaps = calls.slice(1).map((t, i) => t - (calls[i] as number));
    expect(gaps).toEqual([999, 1998, 3996, 7992, 0]);
    expect(routed).toEqual(["a", "b"]);
    expect(up.at(-1)).toBe(true);
    await poller.stop();
  });

  it("ends a backoff wait at once when the server is known to be back (retryNow)", async () => {
    vi.useFakeTimers({ now: 0 });
    const down = (): Promise<Command[]> => Promise.reject(new BlockClientError("ECONNREFUSED", 0));
    const { client, calls } = scriptedClient([down, down, down, down, down, down, down]);
    const poller = new CommandPoller(
      client,
      { token: () => "t", route: async () => undefined, unauthorized: () => undefined, reachable: () => undefined },
      pino({ level: "silent" }),
      new Backoff({ random: () => 0.999 }),
    );
    poller.start();
    await vi.advanceTimersByTimeAsync(60_000); // failures 1..6: the next wait is ~64 s
    const before = calls.length;
    poller.retryNow();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls.length).toBe(before + 1);
    await poller.stop();
  });

  it("stops polling on 401 and reports it", async () => {
    vi.useFakeTimers({ now: 0 });
    let token: string | null = "t";
    const { client, calls } = scriptedClient([() => Promise.reject(new BlockClientError("revoked", 401))]);
    const revoked: number[] = [];
    const poller = new CommandPoller(
      client,
      {
        token: () => token,
        route: async () => undefined,
        unauthorized: (e) => {
          revoked.push(e.status);
          token = null;
        },
        reachable: () => undefined,
      },
      pino({ level: "silent" }),
    );
    poller.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(revoked).toEqual([401]);
    expect(calls).toHaveLength(1);
    await poller.stop();
  });
});
