/**
 * `blockkit sim replay` against a server that fails or does not answer. Its block's waits after
 * failures are the seed's (--seed, as a `blockkit sim` run's blocks are since bd6ee91): before,
 * Math.random. And its first Ctrl-C says how long the stop waits at most, and keeps to it, also
 * during the activation (before: "draining what was sent", and a run whose activation hung waited
 * for it until a second Ctrl-C).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { BackoffLoop } from "../../gateway/agent/index.js";
import { parseRecording } from "../../simulator/replay.js";
import { playRecording } from "../../simulator/replay-player.js";
import { loopbackServer } from "../helpers/http.js";
import { type CliProcess, spawnCli, stopProcess } from "../helpers/process.js";
import { waitFor } from "../helpers/wait.js";

/** Waits recorded per loop: activation fails twice, then answers; the uplink and the poll fail on. */
const WAITS: Record<BackoffLoop, number> = { activate: 2, uplink: 3, poll: 3 };
const FRAMES = [{ t: 0, link: "serial", frame: '{"DEVICE":[{"G":"0","V":0,"D":9,"DA":"19.5"}]}' }].map((l) => JSON.stringify(l)).join("\n");

describe("sim replay against a failing or hung server", () => {
  let server: Awaited<ReturnType<typeof loopbackServer>>;
  let url: string;
  /** What the server does with a request; `held` keeps the ones it does not answer. */
  let handle: (req: IncomingMessage, res: ServerResponse) => void;
  const held: IncomingMessage[] = [];
  let run: CliProcess | null = null;
  let dir: string;

  beforeEach(async () => {
    held.length = 0;
    dir = mkdtempSync(join(tmpdir(), "blockkit-replay-stop-"));
    server = await loopbackServer((req, res) => handle(req, res));
    url = server.url;
  });

  afterEach(async () => {
    if (run) await stopProcess(run, "SIGKILL").catch(() => undefined);
    run = null;
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Plays one reading with `seed` until each loop has waited WAITS times; returns the waits. */
  const waitsOf = async (seed: number): Promise<Record<BackoffLoop, number[]>> => {
    let activations = 0;
    handle = (req, res) => {
      req.resume();
      if (/\/activate/.test(req.url ?? "") && ++activations > WAITS.activate) {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ token: "tokenREPLAYSEED0001" }));
        return;
      }
      res.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify({ result: 0, id: 0, error: "shutting down" }));
    };
    const waits: Record<BackoffLoop, number[]> = { activate: [], uplink: [], poll: [] };
    const stop = new AbortController();
    const done = playRecording({
      baseUrl: `${url}/rest/v0`,
      token: "user-token",
      nodeId: "REPLAYSEED0001",
      entries: parseRecording(FRAMES).entries,
      speed: 0,
      seed,
      signal: stop.signal,
      drainTimeoutMs: 100,
      sleep: (ms, signal, loop) => {
        if (waits[loop].length >= WAITS[loop]) return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
        waits[loop].push(ms);
        return Promise.resolve();
      },
    });
    try {
      await waitFor("every loop of the replayed block waited", () => (Object.keys(WAITS) as BackoffLoop[]).every((l) => waits[l].length === WAITS[l]), 10_000);
    } finally {
      stop.abort();
      await done;
    }
    return waits;
  };

  it("waits after failures as its seed says: the same seed, the same waits; another seed, others", { timeout: 30_000 }, async () => {
    const first = await waitsOf(5);
    // Before: Math.random, so two playbacks with one seed waited differently.
    expect(await waitsOf(5)).toEqual(first);
    const other = await waitsOf(6);
    for (const loop of Object.keys(WAITS) as BackoffLoop[]) expect(other[loop]).not.toEqual(first[loop]);
  });

  it("its first Ctrl-C says how long the stop waits at most, and the stop keeps to it during a hung activation", { timeout: 30_000 }, async () => {
    handle = (req) => void held.push(req);
    const file = join(dir, "frames.jsonl");
    writeFileSync(file, FRAMES);
    run = spawnCli(["sim", "replay", file, "--server", url, "--token", "user-token", "--node-id", "REPLAYSTOP0001", "--seed", "3"]);
    await waitFor("the replayed block's activation request held by the server", () => held.some((r) => /\/activate\?/.test(r.url ?? "")), 15_000);
    const stopAt = Date.now();
    run.child.kill("SIGINT");
    await run.waitForErrLine(/^stopping: waiting up to 3 s for the readings sent \(Ctrl-C again to quit at once\)$/, 10_000);
    // Before: the activation was waited for until a second Ctrl-C.
    let bound: NodeJS.Timeout | undefined;
    const code = await Promise.race([run.exited, new Promise((resolve) => (bound = setTimeout(() => resolve("still running after 8 s"), 8_000)))]);
    clearTimeout(bound);
    expect(code).toBe(130);
    expect(Date.now() - stopAt).toBeLessThan(8_000);
    expect(run.stderr).toContain("replayed (interrupted after 0 of 1 frames): 0/0 readings acknowledged, 0 errors, ingest p50 - p99 - ms");
  });
});
