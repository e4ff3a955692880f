/**
 * Simulator fixes checked against a real server on loopback: devices announced at start, a
 * failed camera upload counted, one rate definition, cleanup at the end and by prefix, replay
 * --instant spreading its readings and ending early with a summary.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ApiClient } from "../../protocol/api-client.js";
import { BlockkitServer } from "../../server/controller.js";
import { cleanupPrefix, nodePrefix } from "../../simulator/cleanup.js";
import { progressLine } from "../../simulator/headless.js";
import { parseRecording } from "../../simulator/replay.js";
import { playRecording } from "../../simulator/replay-player.js";
import { SimRunner } from "../../simulator/runner.js";
import { validateScenario } from "../../simulator/scenario/parse.js";
import { loopbackServer } from "../helpers/http.js";

const TOKEN = "admin-token-0123456789";

describe("simulator findings against a real server", () => {
  let server: BlockkitServer;
  let dir: string;
  let urls: { baseUrl: string; streamUrl: string };
  let api: ApiClient;
  const runners: SimRunner[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-sim-findings-"));
    server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: dir, adminToken: TOKEN, logger: pino({ level: "silent" }), pollHoldSeconds: 2 });
    urls = await server.start();
    api = new ApiClient({ baseUrl: urls.baseUrl, streamUrl: urls.streamUrl, token: TOKEN });
  });

  afterEach(async () => {
    for (const r of runners.splice(0)) await r.stop();
  });

  afterAll(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const run = (doc: Record<string, unknown>, o: { stream?: boolean | string } = {}): SimRunner => {
    const r = new SimRunner({
      scenario: validateScenario({ commands: { rate: 0 }, callbacks: { devices: 0 }, duration_s: 60, ...doc }),
      baseUrl: urls.baseUrl,
      streamUrl: o.stream === false ? undefined : typeof o.stream === "string" ? o.stream : urls.streamUrl,
      token: TOKEN,
      drainTimeoutMs: 3000,
    });
    runners.push(r);
    return r;
  };
  const fleetDevices = async (prefix: string): Promise<string[]> => Object.keys(await api.devices()).filter((g) => g.startsWith(prefix));

  it("every block announces each device at start, before any reading (PLUGIN)", { timeout: 20_000 }, async () => {
    const r = run({
      blocks: { count: 4, node_id: "PLUGTEST{index:6}" },
      devices: [
        { type: "button", generator: { kind: "button", mean_interval_s: 100_000 } },
        { type: "temperature", rate: 0 },
        { type: "relay" },
      ],
    });
    await r.start();
    await vi.waitFor(async () => expect(await fleetDevices("PLUGTEST")).toHaveLength(12), { timeout: 10_000, interval: 100 });
    // The announcements are not readings: only the relays' initial states were sent.
    expect(r.metrics.counters.events_sent).toBe(4);
  });

  it("a camera whose upload fails counts an error and logs it", { timeout: 20_000 }, async () => {
    const r = run({ blocks: { count: 1, node_id: "NOSTREAMCAM{index:4}" }, devices: [{ type: "camera", G: "0" }] }, { stream: false });
    await r.start();
    const guid = "NOSTREAMCAM0000_0_0_1004";
    await vi.waitFor(async () => expect((await api.device(guid)).device_type).toBe("camera"), { timeout: 10_000, interval: 100 });
    await api.actuate(guid, "1");
    await vi.waitFor(() => expect(r.metrics.errorsByKind.get("snapshot_no_stream")).toBe(1), { timeout: 10_000, interval: 50 });
    expect(r.log.tail(10).some((e) => e.level === "error" && /camera snapshot upload without a stream URL failed \(snapshot_no_stream\); give the server's stream_url with --stream/.test(e.text))).toBe(true);
  });

  // The stream given but wrong: nothing listens there, or something that is not the stream listener.
  it.each([
    { what: "nothing listening", kind: "snapshot_network" },
    { what: "an HTTP error", kind: "snapshot_http_404" },
  ])("a camera whose upload to the given stream fails ($what) counts $kind and logs it, naming the stream", { timeout: 20_000 }, async ({ what, kind }) => {
    const wrong = await loopbackServer((_req, res) => res.writeHead(404).end());
    if (what === "nothing listening") await wrong.close();
    try {
      const prefix = what === "nothing listening" ? "DEADSTREAMCA" : "HTTP4STREAMC";
      const r = run({ blocks: { count: 1, node_id: `${prefix}{index:4}` }, devices: [{ type: "camera", G: "0" }] }, { stream: `${wrong.url}/rest/v0` });
      await r.start();
      const guid = `${prefix}0000_0_0_1004`;
      await vi.waitFor(async () => expect((await api.device(guid)).device_type).toBe("camera"), { timeout: 10_000, interval: 100 });
      await api.actuate(guid, "1");
      await vi.waitFor(() => expect(r.metrics.errorsByKind.get(kind)).toBe(1), { timeout: 10_000, interval: 50 });
      expect(r.metrics.counters.snapshots_sent).toBe(0);
      const line = `camera snapshot upload to ${wrong.url}/rest/v0 failed (${kind})`;
      expect(r.log.tail(10).some((e) => e.level === "error" && e.text.includes(line)), JSON.stringify(r.log.tail(10))).toBe(true);
    } finally {
      if (what !== "nothing listening") await wrong.close();
    }
  });

  it("the progress line's rate is the summary's rate", { timeout: 20_000 }, async () => {
    const r = run({ blocks: { count: 3, node_id: "RATETEST{index:6}" }, devices: [{ type: "temperature", rate: 7 }], duration_s: 1.5 });
    await r.start();
    const report = await r.finished;
    expect(report.events_per_s).toBeGreaterThan(0);
    expect(progressLine(r.status())).toContain(`(${report.events_per_s}/s)`);
  });

  it("cleanup: true removes the run's callbacks and unpairs its blocks at the end", { timeout: 30_000 }, async () => {
    const r = run({ blocks: { count: 3, node_id: "CLEANRUN{index:6}" }, devices: [{ type: "temperature", rate: 2 }], callbacks: { devices: 2 }, cleanup: true });
    await r.start();
    await vi.waitFor(() => expect(r.callbacks.registered).toHaveLength(2), { timeout: 10_000, interval: 100 });
    const withCallback = [...r.callbacks.registered];
    expect((await api.callback(withCallback[0] as string)).url).toContain("http://127.0.0.1:");
    r.requestStop();
    await r.finished;
    await r.stop();
    expect(r.cleanupResult).toEqual({ blocks: 3, callbacks: 2, failed: [] });
    expect(Object.keys(await api.blocks()).filter((n) => n.startsWith("CLEANRUN"))).toEqual([]);
    expect(await fleetDevices("CLEANRUN")).toEqual([]);
    await expect(api.callback(withCallback[0] as string)).rejects.toMatchObject({ status: 404 });
  });

  it("sim cleanup --node-prefix removes the leftovers of an earlier run, nothing else", { timeout: 30_000 }, async () => {
    await api.activateDirect("KEEPMEBLOCK001");
    const r = run({ blocks: { count: 3, node_id: "LEFTOVER{index:6}" }, devices: [{ type: "temperature", rate: 2 }], callbacks: { devices: 1 } });
    await r.start();
    await vi.waitFor(() => expect(r.callbacks.registered).toHaveLength(1), { timeout: 10_000, interval: 100 });
    r.requestStop();
    await r.finished;
    await r.stop();
    expect(r.cleanupResult).toBeNull();
    expect(await fleetDevices("LEFTOVER")).toHaveLength(3);
    expect(nodePrefix(r.scenario.blocks.node_id, r.scenario.seed)).toBe("LEFTOVER");
    const result = await cleanupPrefix(api, "LEFTOVER");
    expect(result).toEqual({ blocks: 3, callbacks: 1, failed: [] });
    const left = Object.keys(await api.blocks());
    expect(left.filter((n) => n.startsWith("LEFTOVER"))).toEqual([]);
    expect(left).toContain("KEEPMEBLOCK001");
  });

  it("replay --instant gives the readings distinct times in recorded order", { timeout: 20_000 }, async () => {
    const t = 1_763_000_000_000;
    const rec = parseRecording(
      [0, 5, 9, 30]
        .map((dt, i) => JSON.stringify({ t: t + dt, link: "serial", frame: `{"DEVICE":[{"G":"0","V":0,"D":9,"DA":"${20 + i}"}]}` }))
        .join("\n"),
    );
    const result = await playRecording({ baseUrl: urls.baseUrl, token: TOKEN, nodeId: "INSTANTREPLAY1", entries: rec.entries, speed: 0 });
    expect(result).toMatchObject({ sent: 4, acked: 4, errors: 0, interrupted: false });
    const points = await api.history("INSTANTREPLAY1_0_0_9", { from: 0 });
    expect(points.map((p) => p.v)).toEqual([20, 21, 22, 23]);
    expect(new Set(points.map((p) => p.t)).size).toBe(4);
  });

  it("replay ended early (Ctrl-C) drains what was sent and says it was interrupted", { timeout: 20_000 }, async () => {
    const t = 1_763_000_000_000;
    const rec = parseRecording(
      [0, 10, 60_000]
        .map((dt, i) => JSON.stringify({ t: t + dt, link: "serial", frame: `{"DEVICE":[{"G":"0","V":0,"D":9,"DA":"${i}"}]}` }))
        .join("\n"),
    );
    const stop = new AbortController();
    const result = await playRecording({
      baseUrl: urls.baseUrl,
      token: TOKEN,
      nodeId: "ABORTREPLAY001",
      entries: rec.entries,
      signal: stop.signal,
      onProgress: (played) => {
        if (played === 2) stop.abort();
      },
    });
    expect(result).toMatchObject({ frames: 3, played: 2, sent: 2, acked: 2, interrupted: true });
  });
});
