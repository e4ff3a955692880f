/**
 * `blockkit sim` runs in a child Node process with a larger young generation. Ten thousand
 * simulated blocks allocate a few hundred thousand short-lived objects a second (requests, answers,
 * readings); in V8's default 16 MB semi-spaces many of them live just long enough to be promoted,
 * and the old generation's collections took a fifth of the simulator's CPU. With 32 MB semi-spaces
 * the same fleet costs about a third less CPU per event (measured: bench/simulator.bench.ts at
 * 10,000 blocks). And without V8's memory reducer: when a fleet allocates little (its blocks only
 * hold their polls, or report seldom) it took that for an idle process and ran full collections of
 * the fleet's whole heap one after the other to shrink it, for nothing (10,000 blocks holding their
 * polls, four windows of 30 s: 5.6-16.6 % of a core with it, 5.6-8.7 % without; docs/performance-simulator-hosts.md).
 * V8 reads these only when the process starts, so the command starts itself again with them (unless
 * NODE_OPTIONS or the command line already gives a young generation size). The child shares the
 * terminal; the parent forwards SIGTERM and SIGHUP, a SIGINT as SIGUSR2 (the terminal's reaches
 * both: ParentSigints tells its echo from a SIGINT sent to the parent alone), and exits with the
 * child's code.
 *
 * Open files need no restart: each simulated block holds a long-poll socket, and Node raises the
 * soft limit of open files to the hard one as it starts (protocol/open-files.ts), in this process,
 * the child and the server alike. (The child used to start through `/bin/sh -c 'ulimit -n <hard>'`
 * for it; the test of the server's start-up limit showed Node had done it already.)
 */
import { spawn } from "node:child_process";
import { closeSync, writeSync } from "node:fs";
import type { Readable } from "node:stream";

const FLAG = "--max-semi-space-size";
const SIZE_MB = 32;
const NO_REDUCER = "--no-memory-reducer";
const CHILD = "BLOCKKIT_SIM_CHILD";
/** The child's descriptor on which it says, with one byte, that it keeps the parent's forwards. */
const READY_FD = "BLOCKKIT_SIM_READY_FD";
const NO_FLEET = new Set(["replay", "nodes", "merge", "cleanup"]);

/** What the child is sent when this process gets a SIGINT (see respawn()). */
export const PARENT_SIGINT = "SIGUSR2";

/**
 * How long after a SIGINT of its own the child takes one PARENT_SIGINT for the echo of that same
 * Ctrl-C, ms. The terminal's Ctrl-C reaches both processes, the child first; the parent's forward
 * follows within milliseconds (its event loop only waits for the child).
 */
const ECHO_MS = 2_000;

/**
 * Tells the parent's forwards apart in the child: the echo of a Ctrl-C the child got itself (one
 * forward within ECHO_MS of each SIGINT of its own) is no news; any other forward is a SIGINT sent to
 * the parent alone, a Ctrl-C of its own (so a second `kill -INT PID` quits at once, as a second
 * Ctrl-C does).
 */
export class ParentSigints {
  private readonly own: number[] = [];
  constructor(private readonly echoMs = ECHO_MS) {}

  /** The child got a SIGINT itself at `now` (ms). */
  direct(now: number): void {
    this.own.push(now);
  }

  /** A forward arrived at `now`: true when it is a Ctrl-C of its own, false for an echo. */
  forwarded(now: number): boolean {
    while (this.own.length > 0 && now - (this.own[0] as number) > this.echoMs) this.own.shift();
    if (this.own.length === 0) return true;
    this.own.shift();
    return false;
  }
}

/** Forwards that reached the child before its run listened for them (see holdParentSigints). */
let early: { count: number; listener: () => void } | null = null;

/**
 * In the respawned child, from its first module on: a forward that arrives while the command is
 * still loading and reading its scenario is kept for the run, not left to SIGUSR2's default action
 * (which ended the child, and the command with exit 1 and no word of an interrupt).
 */
export function holdParentSigints(env: NodeJS.ProcessEnv = process.env): void {
  if (env[CHILD] !== "1" || early) return;
  const held = { count: 0, listener: () => void held.count++ };
  early = held;
  process.on(PARENT_SIGINT, held.listener);
  // The parent holds its forwards until then (before it, SIGUSR2's default action would end this
  // process). Not inherited: the descriptor is this process's alone (a worker's fd 3 is its IPC).
  const fd = Number(env[READY_FD]);
  delete env[READY_FD];
  if (Number.isInteger(fd) && fd > 2) {
    try {
      writeSync(fd, "r");
      closeSync(fd);
    } catch {
      // No parent listening (a stray variable): nothing to tell.
    }
  }
}

/** The run listens for forwards from now on: `handler` hears the held ones first, then every new one. */
export function takeParentSigints(handler: () => void): void {
  const held = early;
  early = null;
  process.on(PARENT_SIGINT, handler);
  if (!held) return;
  process.off(PARENT_SIGINT, held.listener);
  for (let i = 0; i < held.count; i++) handler();
}

/** Whether this process should run `argv` in a child with the flag instead. */
export function wantsRespawn(argv: string[], env: NodeJS.ProcessEnv = process.env, execArgv: string[] = process.execArgv): boolean {
  // Only a fleet needs it: not `sim replay`, `sim nodes`, `sim merge` or `sim cleanup`.
  if (argv[2] !== "sim" || NO_FLEET.has(argv[3] ?? "")) return false;
  if (env[CHILD] === "1") return false;
  return !execArgv.some((a) => a.startsWith(FLAG)) && !(env.NODE_OPTIONS ?? "").includes(FLAG);
}

/** The child's arguments: this process's Node flags, the simulator's V8 flags, then the command line. */
export function childArgs(argv: string[], execArgv: string[] = process.execArgv): string[] {
  return [...execArgv, `${FLAG}=${SIZE_MB}`, NO_REDUCER, ...argv.slice(1)];
}

/** Runs this command line again in a child with the flags; resolves with the child's exit code. */
export function respawn(argv: string[]): Promise<number> {
  const args = childArgs(argv);
  const env = { ...process.env, [CHILD]: "1", [READY_FD]: "3" };
  // The terminal's Ctrl-C reaches the child as well; it decides when to end. A SIGINT sent to this
  // process alone (`kill -INT PID`, a supervisor) was lost, and the run went on to its end: the
  // child hears of it as PARENT_SIGINT, a Ctrl-C unless it is the echo of the terminal's, which
  // reached the child first (ParentSigints). One that comes before the child says it keeps them (a
  // byte on its fd 3) is sent once it does: SIGUSR2's default action would end it. Listened for
  // before the spawn, which returns only once the child runs.
  let ready = false;
  let pending = 0;
  const sigint = (): void => {
    if (!ready) pending++;
    else if (started.exitCode === null) started.kill(PARENT_SIGINT);
  };
  process.on("SIGINT", sigint);
  const started = spawn(process.execPath, args, { stdio: ["inherit", "inherit", "inherit", "pipe"], env });
  const forward = (signal: NodeJS.Signals) => () => {
    if (started.exitCode === null) started.kill(signal);
  };
  process.on("SIGTERM", forward("SIGTERM"));
  process.on("SIGHUP", forward("SIGHUP"));
  const readyPipe = started.stdio[3] as Readable;
  readyPipe.on("error", () => undefined);
  readyPipe.once("data", () => {
    ready = true;
    for (; pending > 0; pending--) sigint();
    readyPipe.destroy();
  });
  return new Promise((resolve, reject) => {
    started.once("error", reject);
    started.once("exit", (code, signal) => resolve(code ?? (signal === "SIGINT" || signal === PARENT_SIGINT ? 130 : signal === "SIGTERM" ? 143 : 1)));
  });
}
