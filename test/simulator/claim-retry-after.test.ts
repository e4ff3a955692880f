/**
 * The simulator's claim of a two-legged block (POST /block with the user token) on a server that
 * throttles it: a real server on loopback whose claim answers 429 with a Retry-After when the test
 * says so (the server's own error handler sends the field). A 429 is counted as throttled, the next
 * claim waits the Retry-After, and the time spent throttled does not count against the claim's
 * give-up bound, which is time (on the fleet's clock, here the test's), not a number of tries.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiClient } from "../../protocol/api-client.js";
import { ServiceError, notFound } from "../../server/errors.js";
import { sleep } from "../../gateway/agent/backoff.js";
import { Fleet, type FleetOptions } from "../../simulator/fleet/fleet.js";
import { CredentialPacer } from "../../simulator/fleet/pacer.js";
import { Metrics } from "../../simulator/metrics/metrics.js";
import { validateScenario } from "../../simulator/scenario/parse.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";

describe("two-legged claims answered 429", () => {
  let t: TestServer;
  let fleet: Fleet | null = null;
  const lines: string[] = [];

  beforeEach(async () => {
    t = await startTestServer({}, { listen: true });
    lines.length = 0;
  });

  afterEach(async () => {
    await fleet?.stop();
    fleet = null;
    await t.close();
  });

  /** A fleet of one two-legged block with a relay, on the test server, on `clock`. */
  const oneBlock = (seed: number, clock?: () => number, pacer?: CredentialPacer, pause?: FleetOptions["sleep"]): { fleet: Fleet; metrics: Metrics } => {
    const metrics = new Metrics();
    fleet = new Fleet({
      scenario: validateScenario({ seed, blocks: { count: 1, two_legged: 1 }, devices: [{ type: "relay" }], rate_limit: { requests_per_s: 0 } }),
      baseUrl: t.baseUrl as string,
      userToken: t.token,
      api: new ApiClient({ baseUrl: t.baseUrl as string, token: t.token }),
      metrics,
      log: (_level, text) => void lines.push(text),
      onCommand: () => undefined,
      clock,
      pacer,
      sleep: pause,
    });
    fleet.start();
    return { fleet, metrics };
  };

  /** The server's claims: each call's time (performance.now()), answered by `answer(n)` (n from 0) or the real claim. */
  const interceptClaims = (answer: (n: number) => ServiceError | null): number[] => {
    const activation = t.server.services.activation;
    const claim = activation.claim.bind(activation);
    const calls: number[] = [];
    activation.claim = async (nodeId, userId) => {
      const err = answer(calls.length);
      calls.push(performance.now());
      if (err) throw err;
      return claim(nodeId, userId);
    };
    return calls;
  };

  it("waits the server's Retry-After before claiming again, and counts the 429 as throttled, not as an error", { timeout: 20_000 }, async () => {
    const calls = interceptClaims((n) => (n === 0 ? new ServiceError("RATE_LIMITED", "rate limit exceeded for this credential; slow down", { retryAfterS: 1 }) : null));
    const { fleet, metrics } = oneBlock(71);
    await waitFor("the block activated through the claim", () => fleet.activated === 1, 15_000);
    expect(calls.length).toBeGreaterThanOrEqual(2);
    // The second claim came after the 1 s asked for (before: 200 ms after the 429).
    expect((calls[1] as number) - (calls[0] as number)).toBeGreaterThanOrEqual(1000);
    expect(Object.fromEntries(metrics.throttledByKind)).toEqual({ claim: 1 });
    expect(Object.fromEntries(metrics.errorsByKind)).toEqual({});
    expect(fleet.activationFailed).toBe(0);
  });

  it("gives up after 20 s (CLAIM_GIVE_UP_MS) of the block not waiting, the throttled tries not counted", { timeout: 20_000 }, async () => {
    // Every claim moves the fleet's clock 10 s: five 429s (50 s, past the bound if they counted),
    // then 404s ("not waiting"): the second 404 reaches 20 s of the block not waiting.
    let now = 1_700_000_000_000;
    const calls = interceptClaims((n) => {
      now += 10_000;
      return n < 5 ? new ServiceError("RATE_LIMITED", "rate limit exceeded for this credential; slow down", { retryAfterS: 0 }) : notFound("block not awaiting activation");
    });
    // The waits in real time are cut to 200 ms: five 429s in a row grow the jitter's ceiling to 8 s.
    const { fleet, metrics } = oneBlock(72, () => now, undefined, (ms, signal) => sleep(Math.min(ms, 200), signal));
    await waitFor("the claim given up", () => metrics.errorsByKind.get("claim_gave_up") === 1, 10_000);
    expect(calls).toHaveLength(7);
    expect(Object.fromEntries(metrics.throttledByKind)).toEqual({ claim: 5 });
    expect(Object.fromEntries(metrics.errorsByKind)).toEqual({ claim_gave_up: 1 });
    expect(fleet.activationFailed).toBe(1);
    expect(lines).toContainEqual(expect.stringMatching(/: not waiting for activation after 20 s of claims: gave up$/));
  });

  it("does not count a long Retry-After against the bound when a 404 follows it", { timeout: 20_000 }, async () => {
    // The 429's wait takes 25 s of the fleet's clock (the pacer moves it as the next try starts),
    // then the block is not waiting once (404), then it is: the claim must not give up in between.
    let now = 1_700_000_000_000;
    let waited = false;
    class SlowPacer extends CredentialPacer {
      override take(signal?: AbortSignal): Promise<void> {
        if (waited) {
          waited = false;
          now += 25_000;
        }
        return super.take(signal);
      }
    }
    const calls = interceptClaims((n) => {
      if (n === 0) {
        waited = true;
        return new ServiceError("RATE_LIMITED", "rate limit exceeded for this credential; slow down", { retryAfterS: 0 });
      }
      return n === 1 ? notFound("block not awaiting activation") : null;
    });
    const { fleet, metrics } = oneBlock(73, () => now, new SlowPacer(0, () => now));
    await waitFor("the block activated or the claim given up", () => fleet.activated === 1 || metrics.errorsByKind.has("claim_gave_up"), 10_000);
    expect(Object.fromEntries(metrics.errorsByKind)).toEqual({});
    expect(fleet.activated).toBe(1);
    expect(calls).toHaveLength(3);
    expect(Object.fromEntries(metrics.throttledByKind)).toEqual({ claim: 1 });
  });

  it("adds a seeded jitter to the Retry-After: two blocks throttled together are not asked again at one instant", { timeout: 30_000 }, async () => {
    // Two two-legged blocks whose first claims are both answered 429 with Retry-After: 1 s. The
    // fleet's waits are recorded (and cut to 200 ms of real time); the run is made twice with the
    // same seed, each on a fresh server, to check that the seed gives the same waits.
    const run = async (server: TestServer): Promise<number[]> => {
      const activation = server.server.services.activation;
      const claim = activation.claim.bind(activation);
      const throttled = new Set<string>();
      activation.claim = async (nodeId, userId) => {
        if (!throttled.has(nodeId)) {
          throttled.add(nodeId);
          throw new ServiceError("RATE_LIMITED", "rate limit exceeded for this credential; slow down", { retryAfterS: 1 });
        }
        return claim(nodeId, userId);
      };
      const waits: number[] = [];
      const metrics = new Metrics();
      const f = new Fleet({
        scenario: validateScenario({ seed: 74, blocks: { count: 2, two_legged: 2 }, devices: [{ type: "relay" }], rate_limit: { requests_per_s: 0 } }),
        baseUrl: server.baseUrl as string,
        userToken: server.token,
        api: new ApiClient({ baseUrl: server.baseUrl as string, token: server.token }),
        metrics,
        log: () => undefined,
        onCommand: () => undefined,
        sleep: (ms, signal) => {
          waits.push(ms);
          return sleep(Math.min(ms, 200), signal);
        },
      });
      try {
        f.start();
        await waitFor("both blocks activated through their claims", () => f.activated === 2, 20_000);
      } finally {
        await f.stop();
      }
      expect(Object.fromEntries(metrics.throttledByKind)).toEqual({ claim: 2 });
      expect(Object.fromEntries(metrics.errorsByKind)).toEqual({});
      // The waits after the 429s: Retry-After + the 200 ms step + a jitter below the backoff's first ceiling (500 ms).
      return waits.filter((ms) => ms >= 1_000).sort((a, b) => a - b);
    };
    const first = await run(t);
    expect(first).toHaveLength(2);
    for (const ms of first) {
      expect(ms).toBeGreaterThanOrEqual(1_200);
      expect(ms).toBeLessThan(1_700);
    }
    // Before: both waited exactly 1,200 ms and came back at one instant.
    expect(first[0]).not.toBe(first[1]);
    const again = await startTestServer({}, { listen: true });
    try {
      expect(await run(again)).toEqual(first);
    } finally {
      await again.close();
    }
  });
});
