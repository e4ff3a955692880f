/**
 * The server's lifecycle on a real SQLite file with its ingest thread: a stop that throws, a start
 * that fails, and a stop during the start all leave the database file closed and the ingest thread
 * ended; `stopped` is logged at the end.
 */
import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { StartCancelled, StopError } from "../../protocol/lifecycle.js";
import { BlockkitServer } from "../../server/controller.js";
import { Automation } from "../../server/services/automation/index.js";
import type { IngestThread } from "../../server/store/sqlite/ingest-thread.js";

const dirs: string[] = [];
const busy: Server[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  for (const s of busy.splice(0)) await new Promise((done) => s.close(done));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A server on a fresh directory whose log lines are kept. */
function newServer(options: { port?: number } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "blockkit-lifecycle-"));
  dirs.push(dir);
  const lines: { msg: string; part?: string; failed?: string[] }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split("\n")) if (l) lines.push(JSON.parse(l) as (typeof lines)[number]);
      done();
    },
  });
  const server = new BlockkitServer({ dataDir: dir, logger: pino({ level: "info" }, sink), port: options.port ?? 0, streamPort: 0 });
  return { server, dir, lines };
}

/** Descriptors of this process open on the database files in `dir` (the main and the worker's connection). */
function openDbFiles(dir: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(join(dir, "blockkit.db"))) out.push(target);
    } catch {
      // closed meanwhile (the readdir's own descriptor)
    }
  }
  return out;
}

/** The ingest thread's Linux thread id, read while the server runs. */
async function ingestTid(server: BlockkitServer): Promise<number> {
  const thread = (server.services.store as unknown as { ingestThread: IngestThread | null }).ingestThread;
  const tid = await thread?.started;
  if (typeof tid !== "number") throw new Error("no ingest thread id");
  return tid;
}

const threadAlive = (tid: number): boolean => existsSync(`/proc/self/task/${tid}`);

describe("server lifecycle", () => {
  it("a part whose stop throws still lets the store close: file closed, ingest thread ended, `stopped` logged", async () => {
    const { server, dir, lines } = newServer();
    await server.init();
    const tid = await ingestTid(server);
    expect(threadAlive(tid)).toBe(true);
    expect(openDbFiles(dir).length).toBeGreaterThan(0);
    vi.spyOn(server.services.automation, "stop").mockRejectedValue(new Error("automation cannot stop"));
    const err = await server.stop().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StopError);
    expect((err as StopError).parts).toEqual(["automation"]);
    expect(openDbFiles(dir)).toEqual([]);
    expect(threadAlive(tid)).toBe(false);
    expect(lines.find((l) => l.msg.startsWith("stop failed"))).toMatchObject({ part: "automation" });
    expect(lines.at(-1)).toMatchObject({ msg: "stopped", failed: ["automation"] });
  });

  it("a start that fails (port in use) closes the store before it rejects", async () => {
    const taken = createServer();
    busy.push(taken);
    await new Promise<void>((done) => taken.listen(0, "127.0.0.1", done));
    const port = (taken.address() as { port: number }).port;
    const { server, dir, lines } = newServer({ port });
    await expect(server.start()).rejects.toThrow(/EADDRINUSE/);
    expect(openDbFiles(dir)).toEqual([]);
    expect(lines.find((l) => l.msg.startsWith("start failed"))).toMatchObject({ part: "listeners" });
    await server.stop();
    expect(lines.at(-1)).toMatchObject({ msg: "stopped" });
  });

  it("an init that fails in a part's start closes what had opened", async () => {
    vi.spyOn(Automation.prototype, "start").mockRejectedValue(new Error("rules cannot load"));
    const { server, dir } = newServer();
    await expect(server.init()).rejects.toThrow("rules cannot load");
    expect(openDbFiles(dir)).toEqual([]);
    expect(vi.mocked(Automation.prototype.start)).toHaveBeenCalledTimes(1);
  });

  it("stop() during start cancels the start and closes the store", async () => {
    const { server, dir, lines } = newServer();
    const starting = server.start();
    await server.stop();
    await expect(starting).rejects.toBeInstanceOf(StartCancelled);
    // The store's start may still have been running at the stop: it is closed once it returns.
    await vi.waitFor(() => expect(openDbFiles(dir)).toEqual([]), { timeout: 5_000 });
    expect(lines.some((l) => l.msg === "stopped")).toBe(true);
  });
});
