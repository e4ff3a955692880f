/**
 * `blockkit sim`: a fleet of simulated blocks against a server, with the TUI on a terminal or
 * headless (progress on stderr, `--report FILE`, thresholds -> exit code) for CI.
 * `blockkit sim replay FILE`: plays back frames recorded by a gateway (`--record`) as one block.
 * Exit codes: 0 passed, 1 a threshold broke (or replay lost readings), 2 bad input, 3 the run failed.
 */
import { readFileSync } from "node:fs";
import { type Command, InvalidArgumentError } from "commander";
import { createElement } from "react";
import { parse as parseYaml } from "yaml";
import { runHeadless } from "../simulator/headless.js";
import { type Report, summaryLines, writeReport } from "../simulator/report.js";
import { SimRunner } from "../simulator/runner.js";
import { overrideWithFlags, scenarioFromFlags } from "../simulator/scenario/defaults.js";
import { type LoadedScenario, ScenarioError, validateScenario } from "../simulator/scenario/parse.js";
import { positiveInt, positiveNumber } from "./options.js";
import { registerReplay } from "./sim-replay.js";
import { addTargetOptions, restRoot, target } from "./sim-target.js";

export interface SimFlags {
  server?: string;
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
  callbackHost: string;
  callbackPublicHost?: string;
  progress: number;
  drain: number;
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

export function buildScenario(f: SimFlags): LoadedScenario {
  let doc: Record<string, unknown>;
  const flags = { blocks: f.blocks, devices: f.devices, rate: f.rate, duration: f.duration, seed: f.seed };
  if (f.scenario) {
    let text: string;
    try {
      text = readFileSync(f.scenario, "utf8");
    } catch (err) {
      throw new ScenarioError([`${f.scenario}: ${(err as Error).message}`]);
    }
    let parsed: unknown;
    try {
      parsed = parseYaml(text);
    } catch (err) {
      throw new ScenarioError([`${f.scenario}: ${(err as Error).message.split("\n")[0] ?? "syntax error"}`]);
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new ScenarioError([`${f.scenario}: must be a mapping`]);
    doc = overrideWithFlags(parsed as Record<string, unknown>, flags);
  } else doc = scenarioFromFlags(flags);
  const blocks = { ...((doc.blocks as object | undefined) ?? {}) } as Record<string, unknown>;
  if (f.twoLegged !== undefined) blocks.two_legged = f.twoLegged;
  doc.blocks = blocks;
  if (f.commands !== undefined) doc.commands = { rate: f.commands };
  if (f.callbacks !== undefined) doc.callbacks = { devices: f.callbacks };
  if (f.warmup !== undefined) doc.warmup_s = f.warmup;
  return validateScenario(doc);
}

async function runTui(runner: SimRunner): Promise<Report> {
  const { render } = await import("ink");
  const { App } = await import("../simulator/tui/app.js");
  const { runnerSource } = await import("../simulator/tui/view.js");
  const ui = render(createElement(App, { source: runnerSource(runner) }), { exitOnCtrlC: false });
  try {
    return await runner.finished;
  } finally {
    ui.rerender(createElement(App, { source: runnerSource(runner) }));
    ui.unmount();
  }
}

export function registerSim(program: Command): void {
  const sim = addTargetOptions(program.command("sim").description("simulate a fleet of blocks and devices against a server"))
    .option("--scenario <file>", "scenario file (YAML or JSON); flags override its values")
    .option("--blocks <n>", "number of blocks", positiveInt)
    .option("--devices <m>", "devices per block (a mix of sensors and actuators)", positiveInt)
    .option("--rate <r>", "readings per second per block (with --scenario: per device entry)", positiveNumber)
    .option("--duration <seconds>", "measured duration", positiveNumber)
    .option("--seed <n>", "random seed: the same seed gives the same values", wholeOrZero)
    .option("--two-legged <n>", "blocks activated through the two-legged flow", wholeOrZero)
    .option("--commands <r>", "commands per second the simulator sends to actuators (0: none)", zeroOrMore)
    .option("--callbacks <n>", "devices that get a callback to the simulator's receiver", wholeOrZero)
    .option("--warmup <seconds>", "warm-up before measuring", zeroOrMore)
    .option("--headless", "no TUI: progress on stderr (the default without a terminal)")
    .option("--report <file>", "write the JSON report to FILE")
    .option("--callback-host <host>", "address of the callback receiver", "127.0.0.1")
    .option("--callback-public-host <host>", "host name the server uses to reach the callback receiver")
    .option("--progress <seconds>", "headless progress line interval", positiveNumber, 2)
    .option("--drain <seconds>", "longest wait at the end for unacknowledged readings and commands", positiveNumber, 15)
    .action(async (flags: SimFlags) => {
      const { server, token } = target(flags);
      let scenario: LoadedScenario;
      try {
        scenario = buildScenario(flags);
      } catch (err) {
        process.stderr.write(`blockkit sim: ${(err as Error).message}\n`);
        process.exit(2);
      }
      const runner = new SimRunner({
        scenario,
        baseUrl: restRoot(server),
        streamUrl: flags.stream,
        token,
        callbackHost: flags.callbackHost,
        callbackPublicHost: flags.callbackPublicHost,
        drainTimeoutMs: flags.drain * 1000,
      });
      let signals = 0;
      const onSignal = (): void => {
        if (++signals > 1) process.exit(130);
        runner.requestStop();
      };
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);
      let report: Report;
      try {
        await runner.start();
        const tui = !flags.headless && process.stdout.isTTY === true && process.stdin.isTTY === true;
        report = tui ? await runTui(runner) : await runHeadless(runner, { progressMs: flags.progress * 1000 });
      } catch (err) {
        process.stderr.write(`blockkit sim: the run failed: ${(err as Error).message}\n`);
        await runner.stop().catch(() => undefined);
        process.exit(3);
      }
      await runner.stop();
      if (flags.report) writeReport(flags.report, report);
      for (const line of summaryLines(report)) process.stderr.write(`${line}\n`);
      process.exit(report.passed ? 0 : 1);
    });
  registerReplay(sim);
}
