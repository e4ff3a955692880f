/**
 * The simulator on a server that throttles its user token (a real server on loopback with a low
 * per-credential rate limit): a 429 is backpressure, not an error. Throttled blocks back off and
 * activate; the report counts the throttled answers apart from the errors, and a threshold on
 * errors does not fail on them. Told the server's limit (rate_limit), the simulator stays under it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { BlockkitServer } from "../../server/controller.js";
import { summaryLines } from "../../simulator/report.js";
import { SimRunner } from "../../simulator/runner.js";
import { validateScenario } from "../../simulator/scenario/parse.js";

const TOKEN = "admin-token-0123456789";
/** The server's limit per credential in these tests: 10 requests/s sustained, a burst of 20. */
const LIMIT = 10;

describe("simulator against a server that rate-limits the user token", () => {
  let server: BlockkitServer;
  let dir: string;
  let urls: { baseUrl: string; streamUrl: string };
  const runners: SimRunner[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-sim-throttle-"));
    server = new BlockkitServer({
      port: 0,
      streamPort: 0,
      dataDir: dir,
      adminToken: TOKEN,
      logger: pino({ level: "silent" }),
      pollHoldSeconds: 2,
      rateLimitPerSecond: LIMIT,
    });
    urls = await server.start();
  });

  afterEach(async () => {
    for (const r of runners.splice(0)) await r.stop();
  });

  afterAll(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  // Each test its own user and token: the server's bucket of one test's token is not drained by another's.
  const run = async (doc: Record<string, unknown>): Promise<SimRunner> => {
    const { token } = await server.services.auth.createUser(`throttle${runners.length}${Date.now()}`);
    const r = new SimRunner({
      scenario: validateScenario({ commands: { rate: 0 }, callbacks: { devices: 0 }, duration_s: 120, cleanup: true, ...doc }),
      baseUrl: urls.baseUrl,
      streamUrl: urls.streamUrl,
      token,
      drainTimeoutMs: 5000,
    });
    runners.push(r);
    return r;
  };

  it("a ramp far above the server's limit activates every block with no error; the 429s are counted as throttled", { timeout: 60_000 }, async () => {
    const blocks = 50;
    const r = await run({
      blocks: { count: blocks, node_id: "THROTTLE{index:6}" },
      devices: [{ type: "relay" }],
      // 2,000 blocks/s asked, 10 requests/s allowed: without backpressure most activations fail.
      ramp_up: { blocks_per_s: 2000, max_pending: 500 },
      thresholds: ["errors == 0"],
    });
    await r.start();
    await vi.waitFor(() => expect(r.fleet.activated).toBe(blocks), { timeout: 45_000, interval: 100 });
    r.requestStop();
    const report = await r.finished;
    expect(report.blocks).toEqual({ planned: blocks, activated: blocks, failed: 0, in_flight_at_stop: 0 });
    expect(report.errors_by_kind).toEqual({});
    expect(report.counts.errors).toBe(0);
    expect(report.counts.throttled).toBeGreaterThan(0);
    expect(report.throttled_by_kind.activate).toBe(report.counts.throttled);
    expect(report.thresholds).toEqual([expect.objectContaining({ passed: true, actual: 0 })]);
    expect(report.passed).toBe(true);
    // Every block's relay reported its state once activated.
    expect(report.counts.events_acked).toBe(blocks);
    expect(summaryLines(report)[0]).toMatch(new RegExp(`0 errors, ${report.counts.throttled} throttled`));
  });

  it("told the server's limit, the simulator paces its user token under it: a ramp of 2,000/s, claims, commands and callbacks, and no 429", { timeout: 60_000 }, async () => {
    const blocks = 40;
    const r = await run({
      blocks: { count: blocks, node_id: "PACED{index:7}", two_legged: 2 },
      devices: [{ type: "relay" }, { type: "temperature", rate: 1 }],
      ramp_up: { blocks_per_s: 2000, max_pending: 500 },
      rate_limit: { requests_per_s: LIMIT },
      commands: { rate: 2 },
      callbacks: { devices: 3 },
      thresholds: ["errors == 0", "throttled == 0"],
    });
    const started = performance.now();
    await r.start();
    await vi.waitFor(() => expect(r.fleet.activated).toBe(blocks), { timeout: 45_000, interval: 100 });
    // 38 direct activations at 10/s after a burst of 10: about 3 s, not at once.
    expect(performance.now() - started).toBeGreaterThan(2500);
    await vi.waitFor(() => expect(r.callbacks.registered).toHaveLength(3), { timeout: 20_000, interval: 100 });
    await vi.waitFor(() => expect(r.metrics.counters.commands_received).toBeGreaterThanOrEqual(3), { timeout: 20_000, interval: 100 });
    r.requestStop();
    const report = await r.finished;
    expect(report.blocks).toEqual({ planned: blocks, activated: blocks, failed: 0, in_flight_at_stop: 0 });
    expect(report.throttled_by_kind).toEqual({});
    expect(report.errors_by_kind).toEqual({});
    expect(report.passed).toBe(true);
    expect(r.log.tail(50).some((e) => /ramp_up.blocks_per_s 2000 is above the user token's 10 requests\/s .*direct activations go at 10\/s/.test(e.text))).toBe(true);
    // The run's cleanup (scenario cleanup: true) goes through the same pacer: every block unpaired, none refused.
    await r.stop();
    expect(r.cleanupResult).toMatchObject({ blocks, callbacks: 3, failed: [] });
  });
});
