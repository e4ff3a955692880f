/**
 * The simulator's command driver on a server that throttles its PUTs: the first PUT is answered 429
 * with Retry-After: 5 s (an ApiError as the client makes it from the server's answer), the others
 * are made. The driver's ticks are fake timers and its clock is the test's: after the 429 no
 * command is sent until the Retry-After has passed, and the 429 counts as throttled, not as an error.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApiClient, ApiError } from "../../protocol/api-client.js";
import { CommandDriver } from "../../simulator/fleet/commands.js";
import type { Fleet } from "../../simulator/fleet/fleet.js";
import type { SimDevice } from "../../simulator/fleet/virtual-block.js";
import { Metrics } from "../../simulator/metrics/metrics.js";
import { Random } from "../../simulator/random.js";

describe("command PUTs answered 429", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it("sends no command before the server's Retry-After, and counts the 429 as throttled", async () => {
    // Two online, activated blocks of one relay each (their initial state acknowledged); no pacing.
    const device = (guid: string): SimDevice => ({ guid, kind: "actuator", last: "0" }) as unknown as SimDevice;
    const blocks = ["A", "B"].map((g) => ({ activated: true, acked: 1, state: "online", devices: new Map([[g, device(g)]]) }));
    const fleet = { blocks, running: blocks.length, pacer: { tryTake: () => true } } as unknown as Fleet;
    const puts: number[] = [];
    const api = new ApiClient({ baseUrl: "http://127.0.0.1:9", token: "t" });
    let now = 1_700_000_000_000;
    const T = now;
    api.actuate = async () => {
      puts.push(now - T);
      if (puts.length === 1) throw new ApiError("rate limit exceeded", 429, "RATE_LIMITED", { retryAfterMs: 5_000 });
      return undefined as never;
    };
    const metrics = new Metrics();
    // 10 commands a second: one each 100 ms tick while a device has none pending.
    const driver = new CommandDriver(fleet, api, metrics, 10, new Random(7), () => undefined, () => now);
    driver.start();
    const advance = async (ms: number): Promise<void> => {
      for (let i = 0; i < ms / 100; i++) {
        now += 100;
        await vi.advanceTimersByTimeAsync(100);
      }
    };
    try {
      await advance(100);
      expect(puts).toEqual([100]);
      expect(Object.fromEntries(metrics.throttledByKind)).toEqual({ command_put: 1 });
      // Within the 5 s asked for nothing is sent (before: the next tick, 100 ms later, sent again).
      await advance(4_900);
      expect(puts).toEqual([100]);
      await advance(100);
      expect(puts).toEqual([100, 5_100]);
      expect(Object.fromEntries(metrics.throttledByKind)).toEqual({ command_put: 1 });
      expect(Object.fromEntries(metrics.errorsByKind)).toEqual({});
    } finally {
      driver.stop();
    }
  });
});
