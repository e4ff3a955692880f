/**
 * `blockkit sim`: options only. The simulator itself (ink, react, the fleet) is loaded when the
 * command runs, so that other commands (the gateway on a Pi) do not pay for it in memory.
 */
import { availableParallelism } from "node:os";
import { type Command, InvalidArgumentError, Option } from "commander";
import { BLOCKS_PER_WORKER } from "../simulator/part.js";
import { positiveInt, positiveNumber } from "./options.js";
import { registerCleanup } from "./sim-cleanup.js";
import { registerMerge } from "./sim-merge.js";
import { registerNodes } from "./sim-nodes.js";
import { registerReplay } from "./sim-replay.js";
import { addTargetOptions } from "./sim-target.js";

export interface SimFlags {
  server?: string[];
  stream?: string;
  token?: string;
  blocks?: number;
  devices?: number;
  rate?: number;
  duration?: number;
  seed?: number;
  scenario?: string;
  headless?: boolean;
  report?: string;
  twoLegged?: number;
  commands?: number;
  callbacks?: number;
  warmup?: number;
  /** Requests per second the user token may send (the server's limit per credential); 0: not paced. */
  rateLimit?: number;
  callbackHost: string;
  callbackPublicHost?: string;
  progress: number;
  drain: number;
  cleanup?: boolean;
  cleanupTimeout?: number;
  shard?: FleetPartFlag;
  workers?: number;
  /** The client of the blocks' readings and uploads: the simulator's own HTTP/1.1 client, or undici. */
  transport: "http1" | "undici";
  /** Internal: this process is worker `index` of the part's processes (cli/sim-workers.ts). */
  workerPart?: FleetPartFlag;
}

export interface FleetPartFlag {
  index: number;
  count: number;
}

function wholeOrZero(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`"${value}" is not a whole number`);
  return Number(value);
}

function zeroOrMore(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError(`"${value}" is not a number of 0 or more`);
  return n;
}

export function registerSim(program: Command): void {
  const sim = addTargetOptions(program.command("sim").description("simulate a fleet of blocks and devices against a server"))
    .option("--scenario <file>", "scenario file (YAML or JSON); flags override its values")
    .option("--blocks <n>", "number of blocks (default: 1)", positiveInt)
    .option("--devices <m>", "devices per block, a mix of sensors and actuators (default: 2)", positiveInt)
    .option("--rate <r>", "readings per second per block (default: 1; with --scenario: per device entry)", positiveNumber)
    .option("--duration <seconds>", "measured duration (default: 30)", positiveNumber)
    .option("--seed <n>", "random seed: the same seed gives the same values and node ids (default: 1)", wholeOrZero)
    .option("--two-legged <n>", "blocks activated through the two-legged flow (default: 0)", wholeOrZero)
    .option("--commands <r>", "commands per second the simulator sends to actuators (default: 1; 0: none)", zeroOrMore)
    .option("--callbacks <n>", "devices that get a callback to the simulator's receiver (default: 10; 0: none)", wholeOrZero)
    .option("--warmup <seconds>", "warm-up before measuring (default: 0)", zeroOrMore)
    .option("--rate-limit <r>", "requests per second the simulator sends with the user token, to stay under the server's limit per credential (default 1000, the server's; 0: not paced)", zeroOrMore)
    .option("--headless", "no TUI: progress on stderr (the default without a terminal)")
    .option("--report <file>", "write the JSON report to FILE")
    .option("--callback-host <host>", "address of the callback receiver", "127.0.0.1")
    .option("--callback-public-host <host>", "host name the server uses to reach the callback receiver")
    .option("--progress <seconds>", "headless progress line interval", positiveNumber, 2)
    .option("--drain <seconds>", "longest wait at the end for the activations, readings and commands in flight", positiveNumber, 15)
    .option("--cleanup", "at the end (also after Ctrl-C) remove the run's callbacks and unpair its blocks")
    .option("--cleanup-timeout <seconds>", "longest time the cleanup may take; what is left after it is named, with the command that finishes it (default: 30)", positiveNumber)
    .option("--shard <i/n>", "run shard i of n of the scenario, i from 0 to n-1 (n machines together run all of it; merge their reports with `sim merge`)", part)
    .option(
      "--workers <n>",
      `processes to run the fleet in, with one merged TUI or report (default: the number of cores, ${availableParallelism()} here, but at most one per ${BLOCKS_PER_WORKER} blocks: a small fleet stays in one process)`,
      positiveInt,
    )
    .addOption(new Option("--transport <client>", "HTTP client of the blocks' readings and uploads: the simulator's own HTTP/1.1 client, or undici").choices(["http1", "undici"]).default("http1"))
    .addOption(new Option("--worker-part <i/n>").hideHelp().argParser(part))
    .action(async (flags: SimFlags) => {
      const { runSim } = await import("./sim-run.js");
      await runSim(flags);
    });
  registerReplay(sim);
  registerCleanup(sim);
  registerMerge(sim);
  registerNodes(sim);
  // Commander gives sim's options to sim wherever they stand on the line, also after a sub-command's
  // name: each sub-command names those it reads (readsRunOptions, cli/sim-sub.ts) and refuses the others.
}

function part(value: string): FleetPartFlag {
  const m = /^(\d{1,6})\/(\d{1,6})$/.exec(value);
  if (!m || Number(m[2]) < 1 || Number(m[1]) >= Number(m[2])) throw new InvalidArgumentError(`"${value}" is not i/n with 0 <= i < n (e.g. 0/4)`);
  return { index: Number(m[1]), count: Number(m[2]) };
}
