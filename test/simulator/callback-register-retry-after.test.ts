/**
 * The simulator's callback registrations (PUT /device/:guid/callback with the user token) on a
 * server that throttles them: a real server on loopback whose callback store answers 429 with a
 * Retry-After when the test says so (the server's own error handler sends the field). The
 * registrar's ticks are the test's, on a clock the test moves: after a 429 none is sent until the
 * Retry-After has passed, and the 429 counts as throttled, not as an error.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiClient } from "../../protocol/api-client.js";
import { ServiceError } from "../../server/errors.js";
import { CallbackReceiver } from "../../simulator/callback-receiver.js";
import { CallbackRegistrar } from "../../simulator/fleet/callbacks.js";
import { Fleet } from "../../simulator/fleet/fleet.js";
import { Metrics } from "../../simulator/metrics/metrics.js";
import { validateScenario } from "../../simulator/scenario/parse.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";

describe("callback registrations answered 429", () => {
  let t: TestServer;
  let fleet: Fleet | null = null;
  let receiver: CallbackReceiver | null = null;

  beforeEach(async () => {
    t = await startTestServer({}, { listen: true });
  });

  afterEach(async () => {
    await fleet?.stop();
    fleet = null;
    await receiver?.stop();
    receiver = null;
    await t.close();
  });

  it("waits the server's Retry-After before registering again, and counts the 429 as throttled", { timeout: 20_000 }, async () => {
    const metrics = new Metrics();
    const api = new ApiClient({ baseUrl: t.baseUrl as string, token: t.token });
    // Two blocks of one temperature sensor each, activated directly; their readings are what makes the devices exist.
    fleet = new Fleet({
      scenario: validateScenario({ seed: 81, blocks: { count: 2 }, devices: [{ type: "temperature", rate: 1 }], rate_limit: { requests_per_s: 0 } }),
      baseUrl: t.baseUrl as string,
      userToken: t.token,
      api,
      metrics,
      log: () => undefined,
      onCommand: () => undefined,
    });
    const f = fleet;
    receiver = new CallbackReceiver(metrics, { host: "127.0.0.1" });
    await receiver.start();

    // The server's callback writes: the first answered 429 with Retry-After: 5, the others made.
    const store = t.server.services.store.callbacks;
    const set = store.set.bind(store);
    let puts = 0;
    store.set = async (row) => {
      if (puts++ === 0) throw new ServiceError("RATE_LIMITED", "rate limit exceeded for this credential; slow down", { retryAfterS: 5 });
      return set(row);
    };

    const T = 1_700_000_000_000;
    let now = T;
    const registrar = new CallbackRegistrar(f, api, receiver, metrics, 2, () => undefined, () => now);
    f.open();
    registrar.plan();
    expect(registrar.pending).toBe(2);
    f.start();
    await waitFor("both blocks' readings acknowledged", () => f.blocks.every((b) => b.acked > 0), 15_000);

    await registrar.tick();
    expect(puts).toBe(1);
    expect(Object.fromEntries(metrics.throttledByKind)).toEqual({ callback_register: 1 });
    expect(registrar.registered).toEqual([]);

    // The next ticks within the 5 s asked for send nothing (before: the next tick, 1 s later, asked again).
    for (const at of [1000, 2000, 4999]) {
      now = T + at;
      await registrar.tick();
      expect(puts).toBe(1);
    }
    now = T + 5000;
    await registrar.tick();
    expect(puts).toBe(3);
    expect(registrar.registered).toHaveLength(2);
    expect(registrar.pending).toBe(0);
    expect(Object.fromEntries(metrics.throttledByKind)).toEqual({ callback_register: 1 });
    expect(Object.fromEntries(metrics.errorsByKind)).toEqual({});
  });
});
