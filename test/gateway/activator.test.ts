/**
 * The activator on a throttled server (fake timers, a scripted client): a 429 is backpressure, so
 * the direct flow is asked again, after at least the server's Retry-After, else after the backoff.
 */
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Activator } from "../../gateway/agent/activator.js";
import { Backoff } from "../../gateway/agent/backoff.js";
import { type BlockClient, BlockClientError } from "../../protocol/block-client.js";
import type { TokenStore } from "../../gateway/agent/types.js";

afterEach(() => vi.useRealTimers());

function scripted(answers: (() => Promise<string | null>)[]): { client: BlockClient; calls: { at: number; userToken: string | undefined }[] } {
  const calls: { at: number; userToken: string | undefined }[] = [];
  const client = {
    nodeId: "ACTIVATE00001",
    activate: (o: { userToken?: string; signal?: AbortSignal } = {}) => {
      calls.push({ at: Date.now(), userToken: o.userToken });
      const next = answers.shift();
      return next ? next() : new Promise<string | null>((_r, reject) => o.signal?.addEventListener("abort", () => reject(new Error("aborted"))));
    },
  } as unknown as BlockClient;
  return { client, calls };
}

function memoryTokens(): TokenStore & { saved: string | null } {
  const t = {
    saved: null as string | null,
    load: () => Promise.resolve(t.saved),
    save: (token: string) => {
      t.saved = token;
      return Promise.resolve();
    },
    clear: () => {
      t.saved = null;
      return Promise.resolve();
    },
  };
  return t;
}

const throttled = (retryAfterMs?: number) => (): Promise<string | null> =>
  Promise.reject(new BlockClientError("GET /block/ACTIVATE00001/activate answered 429: rate limit exceeded", 429, { retryAfterMs }));

describe("Activator on a 429", () => {
  it("waits at least the Retry-After before asking again, with the user token still (no fall back to the claim flow)", async () => {
    vi.useFakeTimers({ now: 0 });
    const { client, calls } = scripted([throttled(3000), () => Promise.resolve("block-token")]);
    const tokens = memoryTokens();
    // random 0: the backoff alone would ask again at once.
    const a = new Activator(client, tokens, pino({ level: "silent" }), new Backoff({ random: () => 0 }), "user-token");
    const run = a.run();
    await vi.advanceTimersByTimeAsync(2999);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
    expect(await run).toBe("block-token");
    expect(calls.map((c) => c.userToken)).toEqual(["user-token", "user-token"]);
    expect(tokens.saved).toBe("block-token");
  });

  it("spreads the retries past the Retry-After with the backoff's jitter, so throttled blocks do not come back together", async () => {
    vi.useFakeTimers({ now: 0 });
    const { client, calls } = scripted([throttled(1000), () => Promise.resolve("t")]);
    const a = new Activator(client, memoryTokens(), pino({ level: "silent" }), new Backoff({ baseMs: 500, random: () => 0.5 }), "user-token");
    const run = a.run();
    await vi.advanceTimersByTimeAsync(1249);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
    expect(await run).toBe("t");
  });

  it("without a Retry-After, backs off with the agent's backoff and keeps the user token", async () => {
    vi.useFakeTimers({ now: 0 });
    const { client, calls } = scripted([throttled(), throttled(), () => Promise.resolve("t")]);
    const a = new Activator(client, memoryTokens(), pino({ level: "silent" }), new Backoff({ baseMs: 1000, random: () => 0.999 }), "user-token");
    const run = a.run();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await run).toBe("t");
    const gaps = calls.slice(1).map((c, i) => c.at - (calls[i] as { at: number }).at);
    expect(gaps).toEqual([999, 1998]);
    expect(calls.every((c) => c.userToken === "user-token")).toBe(true);
  });

  it("stop() during the Retry-After wait ends the run at once with null", async () => {
    vi.useFakeTimers({ now: 0 });
    const { client, calls } = scripted([throttled(60_000)]);
    const a = new Activator(client, memoryTokens(), pino({ level: "silent" }), new Backoff({ random: () => 0 }), "user-token");
    const run = a.run();
    await vi.advanceTimersByTimeAsync(10);
    a.stop();
    expect(await run).toBeNull();
    expect(calls).toHaveLength(1);
  });
});

describe("Activator.finish", () => {
  /** A request answered when the test says so (and failed as aborted on its signal's abort). */
  function answeredLater(): { client: BlockClient; answer(token: string): void; aborted: () => boolean } {
    let answer!: (token: string) => void;
    let signal: AbortSignal | undefined;
    const client = {
      nodeId: "ACTIVATE00002",
      activate: (o: { signal?: AbortSignal } = {}) => {
        signal = o.signal;
        return new Promise<string | null>((resolve, reject) => {
          answer = resolve;
          o.signal?.addEventListener("abort", () => reject(new Error("aborted")));
        });
      },
    } as unknown as BlockClient;
    return { client, answer: (t) => answer(t), aborted: () => signal?.aborted === true };
  }

  it("lets the request in flight be answered: its token is kept and run() resolves with it", async () => {
    vi.useFakeTimers({ now: 0 });
    const { client, answer, aborted } = answeredLater();
    const tokens = memoryTokens();
    const a = new Activator(client, tokens, pino({ level: "silent" }), new Backoff({ random: () => 0 }), "user-token");
    const run = a.run();
    await vi.advanceTimersByTimeAsync(0);
    expect(a.inFlight).toBe(true);
    const end = a.finish(5000);
    await vi.advanceTimersByTimeAsync(4999);
    // Before: stop() was the only way to end it, and it abandoned the request (its token lost).
    expect(aborted()).toBe(false);
    answer("block-token");
    expect(await end).toBe("answered");
    expect(await run).toBe("block-token");
    expect(tokens.saved).toBe("block-token");
    expect(a.inFlight).toBe(false);
  });

  it("abandons it once its time is up, and asks nothing more", async () => {
    vi.useFakeTimers({ now: 0 });
    const { client, aborted } = answeredLater();
    const a = new Activator(client, memoryTokens(), pino({ level: "silent" }), new Backoff({ random: () => 0 }), "user-token");
    const run = a.run();
    await vi.advanceTimersByTimeAsync(0);
    const end = a.finish(5000);
    await vi.advanceTimersByTimeAsync(5000);
    expect(aborted()).toBe(true);
    expect(await end).toBe("abandoned");
    expect(await run).toBeNull();
  });

  it("with nothing in flight (a backoff wait) ends the run at once", async () => {
    vi.useFakeTimers({ now: 0 });
    const { client, calls } = scripted([throttled(60_000)]);
    const a = new Activator(client, memoryTokens(), pino({ level: "silent" }), new Backoff({ random: () => 0 }), "user-token");
    const run = a.run();
    await vi.advanceTimersByTimeAsync(10);
    expect(await a.finish(5000)).toBe("none");
    expect(await run).toBeNull();
    expect(calls).toHaveLength(1);
  });

  it("for a claimed block in a backoff wait, sends one more request and keeps its token", async () => {
    vi.useFakeTimers({ now: 0 });
    // Two-legged (no user token): the held request failed (429, a minute asked for), then the block was claimed.
    const { client, calls } = scripted([throttled(60_000), () => Promise.resolve("block-token")]);
    const tokens = memoryTokens();
    const a = new Activator(client, tokens, pino({ level: "silent" }), new Backoff({ random: () => 0 }), undefined);
    const run = a.run();
    await vi.advanceTimersByTimeAsync(10);
    expect(a.inFlight).toBe(false);
    // Before: "none", run() null, one request (the token the server kept for the block never fetched).
    expect(await a.finish(5000, true)).toBe("answered");
    expect(await run).toBe("block-token");
    expect(tokens.saved).toBe("block-token");
    expect(calls).toHaveLength(2);
  });

  it("for a claimed block whose held request ends without a token, sends one more", async () => {
    vi.useFakeTimers({ now: 0 });
    let endHeld!: (token: string | null) => void;
    const held = (): Promise<string | null> => new Promise((resolve) => (endHeld = resolve));
    const { client, calls } = scripted([held, () => Promise.resolve("block-token")]);
    const a = new Activator(client, memoryTokens(), pino({ level: "silent" }), new Backoff({ random: () => 0 }), undefined);
    const run = a.run();
    await vi.advanceTimersByTimeAsync(0);
    const end = a.finish(5000, true);
    endHeld(null);
    expect(await end).toBe("answered");
    expect(await run).toBe("block-token");
    expect(calls).toHaveLength(2);
  });

  it("bounds that one more request on the agent's clock, not Date.now: past the bound, none is sent", async () => {
    vi.useFakeTimers({ now: 0 });
    // The agent's clock (BlockAgentOptions.clock) runs apart from Date.now, as the simulator's may.
    let now = 1_000_000;
    let endHeld!: (token: string | null) => void;
    const held = (): Promise<string | null> => new Promise((resolve) => (endHeld = resolve));
    const { client, calls } = scripted([held, () => Promise.resolve("block-token")]);
    const a = new Activator(client, memoryTokens(), pino({ level: "silent" }), new Backoff({ random: () => 0 }), undefined, () => now);
    const run = a.run();
    await vi.advanceTimersByTimeAsync(0);
    const end = a.finish(5000, true);
    // The held request ends without a token once the agent's clock is past finish()'s 5 s.
    now += 5000;
    endHeld(null);
    // Before: Date.now() (0 here) said there was time left, and one more request was sent (2 calls, a token).
    expect(await end).toBe("answered");
    expect(await run).toBeNull();
    expect(calls).toHaveLength(1);
  });

  it("abandons that one more request once the time is up", async () => {
    vi.useFakeTimers({ now: 0 });
    // The one more request is never answered (the scripted client holds it until aborted).
    const { client, calls } = scripted([throttled(60_000)]);
    const a = new Activator(client, memoryTokens(), pino({ level: "silent" }), new Backoff({ random: () => 0 }), undefined);
    const run = a.run();
    await vi.advanceTimersByTimeAsync(10);
    const end = a.finish(5000, true);
    await vi.advanceTimersByTimeAsync(4999);
    expect(a.inFlight).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    expect(await end).toBe("abandoned");
    expect(await run).toBeNull();
    expect(calls).toHaveLength(2);
  });

  it("without claimed, sends nothing more (the unclaimed block's request would bring nothing)", async () => {
    vi.useFakeTimers({ now: 0 });
    const { client, calls } = scripted([throttled(60_000), () => Promise.resolve("block-token")]);
    const a = new Activator(client, memoryTokens(), pino({ level: "silent" }), new Backoff({ random: () => 0 }), undefined);
    const run = a.run();
    await vi.advanceTimersByTimeAsync(10);
    expect(await a.finish(5000)).toBe("none");
    expect(await run).toBeNull();
    expect(calls).toHaveLength(1);
  });
});
