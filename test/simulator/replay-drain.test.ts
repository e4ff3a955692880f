/**
 * The end of `sim replay`: it waits for the readings sent (the drain) on the outbox's acknowledgement,
 * not by looking every 50 ms (before); it ends at the drain's bound when the server never answers,
 * and a Ctrl-C during the drain cuts it to the 3 s its stopping line names (before, the drain's whole
 * bound, 15 s by default). The outbox's wait on its own with fake timers; the playback against a
 * real server, and against a double on loopback that holds every request but the activation.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { parseRecording } from "../../simulator/replay.js";
import { REPLAY_STOP_DRAIN_MS, SubmitTimedOutbox, playRecording } from "../../simulator/replay-player.js";
import { BlockkitServer } from "../../server/controller.js";
import { loopbackServer } from "../helpers/http.js";
import { spawnCli, stopProcess } from "../helpers/process.js";
import { waitFor } from "../helpers/wait.js";

const FRAMES = [0, 1, 2, 3, 4].map((i) => JSON.stringify({ t: i, link: "serial", frame: `{"DEVICE":[{"G":"0","V":0,"D":9,"DA":"${20 + i}.5"}]}` })).join("\n");
const reading = (key: string) => ({ kind: "data" as const, G: "0", V: 0, D: 9, DA: "1", value: null, ts: 1, key });

describe("the replay outbox's drained()", () => {
  afterEach(() => void vi.useRealTimers());

  /** Whether `p` has settled once the microtasks queued so far have run. */
  const settled = async (p: Promise<void>): Promise<boolean> => {
    let done = false;
    void p.then(() => (done = true));
    await vi.advanceTimersByTimeAsync(0);
    return done;
  };

  it("resolves at the acknowledgement of the last reading, with no timer run", async () => {
    vi.useFakeTimers();
    const outbox = new SubmitTimedOutbox(() => {});
    outbox.append([reading("a"), reading("b")]);
    const ids = outbox.peek(10).map((e) => e.id);
    const drained = outbox.drained(60_000);
    outbox.ack([ids[0] as number]);
    expect(await settled(drained)).toBe(false);
    outbox.ack([ids[1] as number]);
    expect(await settled(drained)).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    expect(await settled(outbox.drained(60_000))).toBe(true);
  });

  it("ends at its bound when nothing is acknowledged, and a stop during it cuts it to stopMs", async () => {
    vi.useFakeTimers();
    const outbox = new SubmitTimedOutbox(() => {});
    outbox.append([reading("a")]);
    const bounded = outbox.drained(1_000);
    await vi.advanceTimersByTimeAsync(999);
    expect(await settled(bounded)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(bounded)).toBe(true);
    const stop = new AbortController();
    const cut = outbox.drained(15_000, stop.signal, 3_000);
    await vi.advanceTimersByTimeAsync(1_000);
    stop.abort();
    await vi.advanceTimersByTimeAsync(2_999);
    expect(await settled(cut)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(cut)).toBe(true);
    // Aborted before the call: stopMs at most, and never past the bound.
    expect(await settled(outbox.drained(15_000, stop.signal, 3_000))).toBe(false);
    const short = outbox.drained(500, stop.signal, 3_000);
    await vi.advanceTimersByTimeAsync(500);
    expect(await settled(short)).toBe(true);
    expect(vi.getTimerCount()).toBe(1);
  });
});

describe("sim replay's drain, played through a real BlockAgent", () => {
  const entries = parseRecording(FRAMES).entries;

  it("ends once the server acknowledged the last reading, far before its bound", { timeout: 20_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "blockkit-replay-drain-"));
    const token = "admin-token-0123456789";
    const server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: dir, adminToken: token, logger: pino({ level: "silent" }), pollHoldSeconds: 1 });
    try {
      const { baseUrl } = await server.start();
      const started = Date.now();
      const result = await playRecording({ baseUrl, token, nodeId: "REPLAYDRAIN0001", entries, speed: 0, drainTimeoutMs: 60_000 });
      expect(result).toMatchObject({ sent: 5, acked: 5, errors: 0, interrupted: false });
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe("against a server that activates the block and then never answers", () => {
    let server: Awaited<ReturnType<typeof loopbackServer>>;
    const held: IncomingMessage[] = [];
    beforeAll(async () => {
      server = await loopbackServer((req: IncomingMessage, res: ServerResponse) => {
        req.resume();
        if (/\/activate/.test(req.url ?? "")) return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ token: "tokenREPLAYDRAIN01" }));
        held.push(req);
      });
    });
    afterAll(() => server.close());

    it("ends at the drain's bound", { timeout: 20_000 }, async () => {
      const started = Date.now();
      const result = await playRecording({ baseUrl: `${server.url}/rest/v0`, token: "user-token", nodeId: "REPLAYDRAIN0002", entries, speed: 0, drainTimeoutMs: 1_000 });
      const took = Date.now() - started;
      expect(result).toMatchObject({ sent: 5, acked: 0, interrupted: false, played: 5 });
      expect(took).toBeGreaterThanOrEqual(1_000);
      expect(took).toBeLessThan(6_000);
    });

    it("a Ctrl-C during the drain cuts it to the 3 s its stopping line names", { timeout: 30_000 }, async () => {
      held.length = 0;
      const stop = new AbortController();
      const done = playRecording({ baseUrl: `${server.url}/rest/v0`, token: "user-token", nodeId: "REPLAYDRAIN0003", entries, speed: 0, drainTimeoutMs: 60_000, signal: stop.signal });
      // The readings' upload is held: every frame was played (at once), the drain is under way.
      await waitFor("the readings' upload held by the server", () => held.some((r) => r.method === "POST" && !/\/activate/.test(r.url ?? "")), 10_000);
      const stopAt = Date.now();
      stop.abort();
      const result = await done;
      // Before: the drain's whole 60 s (the test's own time limit ran out first).
      expect(Date.now() - stopAt).toBeLessThan(REPLAY_STOP_DRAIN_MS + 3_000);
      expect(result).toMatchObject({ sent: 5, acked: 0, played: 5, interrupted: true });
    });

    it("the CLI says so and exits 130 (before: `replayed: 0/5…`, exit 1, after the whole drain)", { timeout: 30_000 }, async () => {
      held.length = 0;
      const dir = mkdtempSync(join(tmpdir(), "blockkit-replay-drain-cli-"));
      const file = join(dir, "frames.jsonl");
      writeFileSync(file, FRAMES);
      const p = spawnCli(["sim", "replay", file, "--server", server.url, "--token", "user-token", "--node-id", "REPLAYDRAIN0004", "--instant"]);
      try {
        await waitFor("the readings' upload held by the server", () => held.some((r) => r.method === "POST" && !/\/activate/.test(r.url ?? "")), 15_000);
        expect(await stopProcess(p, "SIGINT", REPLAY_STOP_DRAIN_MS + 5_000)).toBe(130);
        expect(p.stderr).toContain("replayed (interrupted while waiting for the readings sent): 0/5 readings acknowledged, 0 errors, ingest p50 - p99 - ms");
      } finally {
        await stopProcess(p, "SIGKILL").catch(() => undefined);
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
