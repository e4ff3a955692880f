/**
 * Process helpers for end-to-end tests: free ports, spawning the real `blockkit` CLI, waiting for a
 * line of its output with a bound, and stopping it. Every wait has a timeout; nothing sleeps.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { type AddressInfo, type Socket, connect, createServer } from "node:net";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";

/** The repository root (this file lives in test/helpers). */
export const ROOT = resolve(import.meta.dirname, "..", "..");

/**
 * An address that refuses connections (ECONNREFUSED), held until close(): the local port of a
 * connection of ours to a listener on a port the kernel picked. Nothing listens on that port, and
 * nothing can bind it while the connection lives (EADDRINUSE, SO_REUSEADDR or not), so no other
 * test can answer there, as it could on a port found free and closed again.
 */
export async function refusingAddress(): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const accepted = new Set<Socket>();
  const srv = createServer((s) => {
    accepted.add(s);
    s.once("close", () => accepted.delete(s));
  });
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const holder = connect((srv.address() as AddressInfo).port, "127.0.0.1");
  await once(holder, "connect");
  const port = holder.localPort as number;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((done) => {
        holder.destroy();
        for (const s of accepted) s.destroy();
        srv.close(() => done());
      }),
  };
}

/**
 * A server address where nothing answers, held until close(): a listener on a port the kernel picks
 * that resets every connection, for a program that must find its server unreachable. A port found
 * free and closed again could be bound by another test meanwhile, which would answer.
 */
export async function unreachableServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const srv = createServer((s) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
    s.resetAndDestroy();
  });
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((done) => {
        for (const s of sockets) s.destroy();
        srv.close(() => done());
      }),
  };
}

export interface CliProcess {
  child: ChildProcess;
  /** Every stdout line so far. */
  stdout: string[];
  /** Every stderr line so far (pino JSON for the server). */
  stderr: string[];
  /** Resolves with the first stdout line (past or future) matching `re`; rejects after `timeoutMs`. */
  waitForLine(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** The same for stderr (pino's JSON log lines). */
  waitForErrLine(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
}

/**
 * Collects lines of a stream and lets callers wait for one that matches, with a bound. `closed`
 * resolves once the process exited and its output was read to the end: a wait fails then at once
 * (no line is coming), rather than at its bound.
 */
function lineWatcher(stream: Readable, lines: string[], closed: Promise<unknown>): (re: RegExp, timeoutMs: number, what: () => string) => Promise<RegExpMatchArray> {
  const waiters = new Set<(line: string) => void>();
  createInterface({ input: stream }).on("line", (line) => {
    lines.push(line);
    for (const w of [...waiters]) w(line);
  });
  return (re, timeoutMs, what) =>
    new Promise((done, fail) => {
      for (const line of lines) {
        const m = re.exec(line);
        if (m) return done(m);
      }
      let settled = false;
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        waiters.delete(check);
        return true;
      };
      const check = (line: string): void => {
        const m = re.exec(line);
        if (m && settle()) done(m);
      };
      const timer = setTimeout(() => {
        if (settle()) fail(new Error(`no line matching ${re} within ${timeoutMs} ms; ${what()}`));
      }, timeoutMs);
      waiters.add(check);
      void closed.then(() => {
        if (settle()) fail(new Error(`no line matching ${re}: ${what()}`));
      });
    });
}

/** Spawns `node --import tsx [...nodeArgs] cli/index.ts ...args` from the repository root. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}, nodeArgs: string[] = []): CliProcess {
  const child = spawn(process.execPath, ["--import", "tsx", ...nodeArgs, "cli/index.ts", ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const exited = new Promise<number | string>((done) => {
    child.once("exit", (code, signal) => done(code ?? signal ?? -1));
  });
  // After the exit, once stdout and stderr were read to their end.
  const closed = new Promise<void>((done) => child.once("close", () => done()));
  const waitOut = lineWatcher(child.stdout as Readable, stdout, closed);
  const waitErr = lineWatcher(child.stderr as Readable, stderr, closed);
  let exitInfo = "";
  void exited.then((c) => {
    exitInfo = `process exited with ${c}`;
  });
  return {
    child,
    stdout,
    stderr,
    exited,
    waitForLine: (re, timeoutMs = 15_000) =>
      waitOut(re, timeoutMs, () => `${exitInfo} stderr tail: ${stderr.slice(-5).join("\n")}`),
    waitForErrLine: (re, timeoutMs = 15_000) => waitErr(re, timeoutMs, () => `${exitInfo} stdout tail: ${stdout.slice(-5).join("\n")}`),
  };
}

/** Sends `signal` and waits (bounded) for the exit; SIGKILLs when it does not come. Returns the exit code or signal. */
export async function stopProcess(p: CliProcess, signal: NodeJS.Signals = "SIGTERM", timeoutMs = 10_000): Promise<number | string> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return p.exited;
  p.child.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((done) => {
    timer = setTimeout(() => done("late"), timeoutMs);
  });
  const r = await Promise.race([p.exited, late]);
  clearTimeout(timer);
  if (r !== "late") return r;
  p.child.kill("SIGKILL");
  await p.exited;
  throw new Error(`process did not exit within ${timeoutMs} ms of ${signal}`);
}

/**
 * Starts `blockkit server` on ports the kernel picks (port 0) and waits for its base_url line, which
 * names the bound port (stream_url names the stream port). Ports picked beforehand (free a moment ago)
 * raced: two calls returned the same port once, and the stream listener failed with EADDRINUSE.
 */
export async function startServerProcess(opts: {
  dataDir: string;
  adminToken: string;
  pollHoldSeconds?: number;
  extraArgs?: string[];
  timeoutMs?: number;
  /** Extra environment of the process. */
  env?: NodeJS.ProcessEnv;
}): Promise<CliProcess & { baseUrl: string }> {
  const p = spawnCli([
    "server",
    "--port",
    "0",
    "--stream-port",
    "0",
    "--data",
    opts.dataDir,
    "--admin-token",
    opts.adminToken,
    "--poll-hold",
    String(opts.pollHoldSeconds ?? 2),
    ...(opts.extraArgs ?? []),
  ], opts.env);
  try {
    const m = await p.waitForLine(/^base_url\s+(\S+)/, opts.timeoutMs ?? 20_000);
    return Object.assign(p, { baseUrl: m[1] as string });
  } catch (err) {
    p.child.kill("SIGKILL");
    throw err;
  }
}
