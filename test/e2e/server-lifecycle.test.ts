/**
 * The real `blockkit server` process stopped during its start: SIGTERM while the store is still
 * opening (a PostgreSQL peer that accepts the connection and never answers) exits 0 at once, with
 * `stopped` logged, instead of waiting for the connection's timeout or dying on the signal. The
 * timeout is set to 60 s (`connect_timeout`), so a loaded machine's slow exit is not mistaken for
 * a stop that waited for it.
 */
import { once } from "node:events";
import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type CliProcess, spawnCli, stopProcess } from "../helpers/process.js";

let mute: Server | null = null;
const sockets: Socket[] = [];
let proc: CliProcess | null = null;

afterEach(async () => {
  if (proc) await stopProcess(proc, "SIGKILL");
  proc = null;
  for (const s of sockets.splice(0)) s.destroy();
  if (mute) await new Promise((done) => mute?.close(done));
  mute = null;
});

describe("blockkit server stopped during start", () => {
  it("SIGTERM while the store connects: exit 0 well before the connection timeout, `stopped` logged", { timeout: 45_000 }, async () => {
    mute = createServer((s) => void sockets.push(s));
    mute.listen(0, "127.0.0.1");
    await once(mute, "listening");
    const pgPort = (mute.address() as { port: number }).port;
    const connected = once(mute, "connection");
    proc = spawnCli(["server", "--port", "0", "--db", `postgres://blockkit@127.0.0.1:${pgPort}/blockkit?connect_timeout=60`], {
      BLOCKKIT_LOG_FORMAT: "json",
    });
    // The store's first connection reached the peer: the process is inside its start.
    await connected;
    const began = Date.now();
    const code = await stopProcess(proc, "SIGTERM", 30_000);
    expect(code).toBe(0);
    // The connection's timeout is 60 s: the stop did not wait for it.
    expect(Date.now() - began).toBeLessThan(30_000);
    // The exit can come before its stderr pipe was read to the end: wait for the lines themselves
    // (each wait fails at once if the pipe closed without its line).
    await proc.waitForErrLine(/"msg":"stopping"/, 10_000);
    await proc.waitForErrLine(/"msg":"stopped"/, 10_000);
    expect(proc.stderr.at(-1), proc.stderr.join("\n")).toMatch(/"msg":"stopped"/);
    expect(proc.stdout.join("\n")).not.toMatch(/ready/);
  });
});
