import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { StreamFollower } from "../../cli/api/stream-follower.js";
import { frameLine } from "../../cli/api/watch.js";
import { runCli } from "../../cli/program.js";
import { type StreamFrame, streamAddress } from "../../protocol/stream.js";
import { BlockClient } from "../../protocol/block-client.js";
import { BlockkitServer } from "../../server/controller.js";
import { ROOT } from "../helpers/process.js";
import { ADMIN_TOKEN } from "../helpers/live.js";
import { type Live, type TestBlock, startCli } from "./helpers.js";

describe("blockkit watch", () => {
  let live: Live;
  let block: TestBlock;

  beforeAll(async () => {
    live = await startCli();
    block = await live.block("CLIWATCH0001");
    await block.send(9, "1");
    await block.send(1002, "0");
  });
  afterAll(async () => {
    await live.close();
  });

  it("prints a reading posted after it started, and exits 0 on SIGINT (the real process)", { timeout: 30_000 }, async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "cli/index.ts", "watch", "--server", live.authUrl, "--token", ADMIN_TOKEN], {
      cwd: ROOT,
      env: { ...process.env, HOME: join(live.dir, "home"), BLOCKKIT_SERVER: "", BLOCKKIT_TOKEN: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
    try {
      await vi.waitFor(() => expect(stderr).toContain(`blockkit watch: following ws://127.0.0.1:${new URL(live.authUrl).port}/rest/v0/stream`), {
        timeout: 20_000,
        interval: 50,
      });
      expect(stderr).not.toContain(ADMIN_TOKEN);
      const guid = await block.send(9, "23.5");
      await vi.waitFor(() => expect(stdout).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d  data    ${guid}  23\\.5$`, "m")), {
        timeout: 5_000,
        interval: 20,
      });
      child.kill("SIGINT");
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });

  it("prints one JSON object per line with -o json, only for the GUIDs given, until interrupted", async () => {
    let stdout = "";
    let stderr = "";
    let interrupt: (() => void) | null = null;
    const running = runCli(["node", "blockkit", "watch", "CLIWATCH0001_0_0_1002", "-o", "json", "--server", live.baseUrl, "--token", ADMIN_TOKEN], {
      stdout: (t) => (stdout += t),
      stderr: (t) => (stderr += t),
      env: { HOME: join(live.dir, "home") },
      readStdin: () => Promise.resolve(""),
      onInterrupt: (handler) => {
        interrupt = handler;
        return () => {
          interrupt = null;
        };
      },
    });
    await vi.waitFor(() => expect(stderr).toContain("following"), { timeout: 5_000, interval: 20 });
    await block.send(9, "99");
    const relay = await block.send(1002, "1");
    await vi.waitFor(() => expect(stdout).not.toBe(""), { timeout: 5_000, interval: 20 });
    const frames = stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as StreamFrame);
    expect(frames).toEqual([{ type: "data", guid: relay, DA: 1, timestamp: expect.any(Number) as number }]);
    expect(interrupt).not.toBeNull();
    (interrupt as unknown as () => void)();
    expect(await running).toBe(0);
  });

  it("ends with exit 1 when the server refuses the token, and refuses a bad GUID with exit 2", async () => {
    let stderr = "";
    const io = {
      stdout: () => {},
      stderr: (t: string) => (stderr += t),
      env: {},
      readStdin: () => Promise.resolve(""),
      onInterrupt: () => () => {},
    };
    expect(await runCli(["node", "blockkit", "watch", "--server", live.authUrl, "--token", "wrong-token-0123456789"], io)).toBe(1);
    expect(stderr).toBe("blockkit watch: the server refused the stream (401): check the token\n");
    stderr = "";
    expect(await runCli(["node", "blockkit", "watch", "nope", "--server", live.authUrl, "--token", ADMIN_TOKEN], io)).toBe(2);
    expect(stderr).toMatch(/^blockkit watch: <guids>: "nope" is not a device GUID/);
  });
});

describe("watch lines", () => {
  it("gives every kind of frame one readable line", () => {
    const t = Date.UTC(2026, 0, 31, 12, 0, 5);
    const now = () => t;
    expect(frameLine({ type: "data", guid: "ABCDEF123456_0_0_9", DA: 21.5, timestamp: t }, now)).toBe("2026-01-31 12:00:05  data    ABCDEF123456_0_0_9  21.5");
    expect(frameLine({ type: "config", guid: "ABCDEF123456_0_0_9", config: { type: "UNPLUG" }, timestamp: t }, now)).toBe(
      "2026-01-31 12:00:05  config  ABCDEF123456_0_0_9  UNPLUG",
    );
    expect(frameLine({ type: "device", guid: "ABCDEF123456_0_0_9", change: "deleted" }, now)).toBe("2026-01-31 12:00:05  device  ABCDEF123456_0_0_9  deleted");
    expect(frameLine({ type: "block", nodeId: "ABCDEF123456", change: "awaiting" }, now)).toBe("2026-01-31 12:00:05  block   ABCDEF123456  awaiting");
    expect(frameLine({ type: "rule", rid: 3, ok: false, timestamp: t }, now)).toBe("2026-01-31 12:00:05  rule    3  failed");
    expect(frameLine({ type: "lag", dropped: 17 }, now)).toBe("2026-01-31 12:00:05  lag     17 events dropped (this terminal was too slow)");
  });
});

describe("StreamFollower", () => {
  it("says the connection was lost, reconnects with backoff when the server is back, and follows again", { timeout: 30_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "blockkit-cli-follow-"));
    const start = (port: number) =>
      new BlockkitServer({ host: "127.0.0.1", port, streamPort: 0, dataDir: dir, logger: pino({ level: "silent" }), adminToken: ADMIN_TOKEN, pollHoldSeconds: 1 });
    let server = start(0);
    const urls = await server.start();
    const status: string[] = [];
    const frames: StreamFrame[] = [];
    const follower = new StreamFollower({
      url: streamAddress(urls.authUrl, { userToken: ADMIN_TOKEN }),
      onFrame: (f) => frames.push(f),
      onStatus: (l) => status.push(l),
      onFatal: (err) => status.push(`fatal ${err.message}`),
      backoffMs: 20,
      maxBackoffMs: 100,
    });
    try {
      follower.start();
      await vi.waitFor(() => expect(status).toEqual([`following ws://127.0.0.1:${new URL(urls.authUrl).port}/rest/v0/stream (Ctrl-C to stop)`]), {
        timeout: 5_000,
        interval: 10,
      });
      await server.stop();
      await vi.waitFor(() => expect(status.some((l) => /^connection lost: .*; reconnecting in 20 ms$/.test(l))).toBe(true), { timeout: 5_000, interval: 10 });
      await vi.waitFor(() => expect(status.some((l) => /^connection lost: connect ECONNREFUSED .*; reconnecting in 40 ms$/.test(l))).toBe(true), {
        timeout: 5_000,
        interval: 10,
      });
      server = start(Number(new URL(urls.authUrl).port));
      await server.start();
      await vi.waitFor(() => expect(status[status.length - 1]).toMatch(/^reconnected to ws:\/\//), { timeout: 5_000, interval: 10 });
      const b = new BlockClient({ baseUrl: urls.baseUrl, nodeId: "CLIFOLLOW001" });
      try {
        const token = await b.activate({ userToken: ADMIN_TOKEN });
        await b.data(token ?? "", { G: "0", V: 0, D: 9, DA: "7" });
      } finally {
        await b.close();
      }
      await vi.waitFor(() => expect(frames.some((f) => f.type === "data" && f.guid === "CLIFOLLOW001_0_0_9")).toBe(true), { timeout: 5_000, interval: 10 });
    } finally {
      await follower.stop();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
