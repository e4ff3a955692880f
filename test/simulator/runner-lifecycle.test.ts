/** The simulator's runner and fleet: constructors only assign; the transport and the blocks come with start. */
import { describe, expect, it } from "vitest";
import { SimRunner } from "../../simulator/runner.js";
import { validateScenario } from "../../simulator/scenario/parse.js";

/** A runner of two blocks against an address where nothing listens (their activation never comes). */
function unreachable(scenario: Record<string, unknown>, clock?: () => number): SimRunner {
  return new SimRunner({
    scenario: validateScenario({ blocks: { count: 2 }, devices: [{ type: "temperature" }], ...scenario }),
    baseUrl: "http://127.0.0.1:9/rest/v0",
    token: "unused-token-000000",
    callbackHost: "127.0.0.1",
    drainTimeoutMs: 100,
    clock,
  });
}

/** Asks the runner to stop before it starts, then starts it: its report and log lines. */
async function stoppedAtOnce(runner: SimRunner): Promise<{ report: Awaited<SimRunner["finished"]>; texts: string[] }> {
  const texts: string[] = [];
  runner.onLog((e) => texts.push(e.text));
  runner.requestStop();
  await runner.start();
  const report = await runner.finished;
  await runner.stop();
  return { report, texts };
}

describe("SimRunner and Fleet lifecycle", () => {
  it("a runner that is built but never started opens nothing, and stops cleanly", async () => {
    const runner = new SimRunner({
      scenario: validateScenario({ blocks: { count: 5 }, devices: [{ type: "temperature" }] }),
      part: { index: 1, count: 2 },
      baseUrl: "http://127.0.0.1:9/rest/v0",
      token: "unused-token-000000",
    });
    expect(runner.fleet.http).toBeNull();
    expect(runner.fleet.blocks).toHaveLength(0);
    // Blocks 1 and 3 of 0..4 are this part's.
    expect(runner.fleet.planned).toBe(2);
    runner.fleet.open();
    expect(runner.fleet.http).not.toBeNull();
    expect(runner.fleet.blocks.map((b) => b.index)).toEqual([1, 3]);
    await expect(runner.stop()).resolves.toBeUndefined();
  });

  it("a stop asked for before start() returned ends the run once it starts", { timeout: 20_000 }, async () => {
    // Before: the request reached no run loop, and the run waited out its ramp limit and its 60 s.
    const { report, texts } = await stoppedAtOnce(unreachable({ duration_s: 60 }));
    expect(report.duration_s).toBeLessThan(1);
    expect(texts.filter((t) => t.startsWith("ramp-up incomplete"))).toEqual([]);
  });

  it("a stop during start-up opens no measured window: no warm-up, no chaos, nothing measured", { timeout: 20_000 }, async () => {
    // A clock that moves 250 ms at each read: any window opened on the way to the drain would measure time.
    let reads = 0;
    const { report, texts } = await stoppedAtOnce(unreachable({ duration_s: 60, warmup_s: 1, chaos: [{ at_s: 0, action: "burst", blocks: 1, events: 5 }] }, () => Date.now() + 250 * reads++));
    // Before: the run went through warm-up and "running" (measure start set, chaos started) to the
    // drain, and reported the clock's steps as measured time.
    expect(report.duration_s).toBe(0);
    expect(report.events_per_s).toBe(0);
    expect(texts.filter((t) => t.startsWith("chaos"))).toEqual([]);
  });
});
