/** A virtual camera answers a user's snapshot request through the real server with its generated JPEG. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ApiClient } from "../../protocol/api-client.js";
import { BlockkitServer } from "../../server/controller.js";
import { cameraFrame } from "../../simulator/jpeg.js";
import { SimRunner } from "../../simulator/runner.js";
import { validateScenario } from "../../simulator/scenario/parse.js";

const TOKEN = "admin-token-0123456789";

describe("virtual camera", () => {
  let server: BlockkitServer;
  let dir: string;
  let runner: SimRunner | null = null;
  let urls: { baseUrl: string; streamUrl: string };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-sim-cam-"));
    server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: dir, adminToken: TOKEN, logger: pino({ level: "silent" }), pollHoldSeconds: 5 });
    urls = await server.start();
  });

  afterAll(async () => {
    await runner?.stop();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("uploads a generated JPEG when the user asks for a snapshot", { timeout: 30_000 }, async () => {
    const scenario = validateScenario({
      blocks: { count: 1, node_id: "CAMBLOCK{index:6}" },
      devices: [{ type: "camera", G: "0", generator: { kind: "camera", width: 32, height: 16 } }],
      duration_s: 30,
      commands: { rate: 0 },
      callbacks: { devices: 0 },
    });
    runner = new SimRunner({ scenario, baseUrl: urls.baseUrl, streamUrl: urls.streamUrl, token: TOKEN });
    await runner.start();
    const api = new ApiClient({ baseUrl: urls.baseUrl, streamUrl: urls.streamUrl, token: TOKEN });
    const guid = "CAMBLOCK000000_0_0_1004";
    // The camera exists once its PLUGIN announcement was acknowledged.
    await vi.waitFor(async () => expect((await api.device(guid)).device_type).toBe("camera"), { timeout: 10_000, interval: 100 });
    const jpeg = await api.snapshot(guid);
    expect(jpeg.equals(cameraFrame(32, 16, 0))).toBe(true);
    expect(runner.metrics.counters.snapshots_sent).toBe(1);
    runner.requestStop();
    const report = await runner.finished;
    expect(report.counts.errors).toBe(0);
  });
});
