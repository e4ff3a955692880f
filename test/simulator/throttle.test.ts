/**
 * The simulator on a server that throttles its user token (a real server on loopback with a low
 * per-credential rate limit): a 429 is backpressure, not an error. Throttled blocks back off and
 * activate; the report counts the throttled answers apart from the errors, and a threshold on
 * errors does not fail on them.
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

  const run = (doc: Record<string, unknown>): SimRunner => {
    const r = new SimRunner({
      scenario: validateScenario({ commands: { rate: 0 }, callbacks: { devices: 0 }, duration_s: 120, cleanup: true, ...doc }),
      baseUrl: urls.baseUrl,
      streamUrl: urls.streamUrl,
      token: TOKEN,
      drainTimeoutMs: 5000,
    });
    runners.push(r);
    return r;
  };

  it("a ramp far above the server's limit activates every block with no error; the 429s are counted as throttled", { timeout: 60_000 }, async () => {
    const blocks = 50;
    const r = run({
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
    expect(report.blocks).toEqual({ planned: blocks, activated: blocks, failed: 0 });
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
});
