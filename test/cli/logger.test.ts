/**
 * Log format: JSON lines for machines, readable lines on a terminal, BLOCKKIT_LOG_FORMAT to choose.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import pino from "pino";
import { logFormat, programLogger } from "../../cli/logger.js";
import { type CliProcess, spawnCli, stopProcess } from "../helpers/process.js";

describe("log format", () => {
  it("is pretty on a terminal and JSON otherwise, unless the environment says", () => {
    expect(logFormat({}, { isTTY: true })).toBe("pretty");
    expect(logFormat({}, { isTTY: false })).toBe("json");
    expect(logFormat({}, {})).toBe("json");
    expect(logFormat({ BLOCKKIT_LOG_FORMAT: "json" }, { isTTY: true })).toBe("json");
    expect(logFormat({ BLOCKKIT_LOG_FORMAT: "pretty" }, { isTTY: false })).toBe("pretty");
    expect(() => logFormat({ BLOCKKIT_LOG_FORMAT: "xml" }, {})).toThrow(/BLOCKKIT_LOG_FORMAT must be "json" or "pretty", got "xml"/);
  });

  it("writes each JSON line before the call returns, so lines keep their order up to an exit", async () => {
    const logger = await programLogger("blockkit-test", "silent", "json");
    const stream = (logger as unknown as Record<symbol, { sync?: boolean; minLength?: number }>)[pino.symbols.streamSym];
    // An asynchronous destination's flush at process.exit could overtake its own write in flight.
    expect(stream?.sync).toBe(true);
    expect(stream?.minLength).toBe(0);
  });

  describe("of the server process", () => {
    let p: CliProcess | undefined;
    let dir: string | undefined;
    afterEach(async () => {
      if (p) await stopProcess(p);
      if (dir) rmSync(dir, { recursive: true, force: true });
      p = undefined;
    });

    it.each([
      ["json", /^\{"level":30,.*"msg":"/],
      ["pretty", /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(blockkit\): /],
    ])("BLOCKKIT_LOG_FORMAT=%s", async (format, line) => {
      dir = mkdtempSync(join(tmpdir(), "blockkit-log-"));
      // Ports the kernel picks: ports picked beforehand (free a moment ago) can be taken by another test meanwhile.
      p = spawnCli(["server", "--port", "0", "--stream-port", "0", "--data", dir, "--admin-token", "log-format-token-0123"], { BLOCKKIT_LOG_FORMAT: format });
      await p.waitForLine(/blockkit server ready/, 20_000);
      await p.waitForErrLine(line, 10_000);
    });
  });
});
