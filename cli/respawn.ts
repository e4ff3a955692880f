/**
 * `blockkit sim` runs in a child Node process with a larger young generation. Ten thousand
 * simulated blocks allocate a few hundred thousand short-lived objects a second (requests, answers,
 * readings); in V8's default 16 MB semi-spaces many of them live just long enough to be promoted,
 * and the old generation's collections took a fifth of the simulator's CPU. With 32 MB semi-spaces
 * the same fleet costs about a third less CPU per event (measured: bench/simulator.bench.ts at
 * 10,000 blocks). V8 reads the size only when the process starts, so the command starts itself again
 * with the flag (unless NODE_OPTIONS or the command line already gives one). The child shares the
 * terminal; the parent forwards SIGTERM and SIGHUP, a SIGINT as SIGUSR2 (the terminal's reaches
 * both), and exits with the child's code.
 *
 * Open files need no restart: each simulated block holds a long-poll socket, and Node raises the
 * soft limit of open files to the hard one as it starts (protocol/open-files.ts), in this process,
 * the child and the server alike. (The child used to start through `/bin/sh -c 'ulimit -n <hard>'`
 * for it; the test of the server's start-up limit showed Node had done it already.)
 */
import { spawn } from "node:child_process";

const FLAG = "--max-semi-space-size";
const SIZE_MB = 32;
const CHILD = "BLOCKKIT_SIM_CHILD";
const NO_FLEET = new Set(["replay", "nodes", "merge", "cleanup"]);

/** What the child is sent when this process gets a SIGINT (see respawn()). */
export const PARENT_SIGINT = "SIGUSR2";

/** Whether this process should run `argv` in a child with the flag instead. */
export function wantsRespawn(argv: string[], env: NodeJS.ProcessEnv = process.env, execArgv: string[] = process.execArgv): boolean {
  // Only a fleet needs it: not `sim replay`, `sim nodes`, `sim merge` or `sim cleanup`.
  if (argv[2] !== "sim" || NO_FLEET.has(argv[3] ?? "")) return false;
  if (env[CHILD] === "1") return false;
  return !execArgv.some((a) => a.startsWith(FLAG)) && !(env.NODE_OPTIONS ?? "").includes(FLAG);
}

/** Runs this command line again in a child with the flag; resolves with the child's exit code. */
export function respawn(argv: string[]): Promise<number> {
  const args = [...process.execArgv, `${FLAG}=${SIZE_MB}`, ...argv.slice(1)];
  const env = { ...process.env, [CHILD]: "1" };
  const child = spawn(process.execPath, args, { stdio: "inherit", env });
  const forward = (signal: NodeJS.Signals) => () => {
    if (child.exitCode === null) child.kill(signal);
  };
  process.on("SIGTERM", forward("SIGTERM"));
  process.on("SIGHUP", forward("SIGHUP"));
  // The terminal's Ctrl-C reaches the child as well; it decides when to end. A SIGINT sent to this
  // process alone (`kill -INT PID`, a supervisor) was lost, and the run went on to its end: the
  // child hears of it as PARENT_SIGINT, a Ctrl-C unless it is handling one already (the terminal's,
  // which reaches it first: it is pending before this process runs, and pending signals are
  // delivered lowest number first, SIGINT before SIGUSR2).
  process.on("SIGINT", forward(PARENT_SIGINT));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code, signal) => resolve(code ?? (signal === "SIGINT" ? 130 : signal === "SIGTERM" ? 143 : 1)));
  });
}
