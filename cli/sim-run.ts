/** The `blockkit sim` run: scenario from flags or file, the fleet, the TUI or headless, the report. */
import { readFileSync } from "node:fs";
import isInCi from "is-in-ci";
import { createElement } from "react";
import { parse as parseYaml } from "yaml";
import { runHeadless } from "../simulator/headless.js";
import { type Report, summaryLines, writeReport } from "../simulator/report.js";
import { CALLBACK_DRAIN_MS, type RunPhase, SimRunner } from "../simulator/runner.js";
import { overrideWithFlags, scenarioFromFlags } from "../simulator/scenario/defaults.js";
import { type LoadedScenario, ScenarioError, validateScenario } from "../simulator/scenario/parse.js";
import { type CleanupResult, cleanupLines, nodePrefix } from "../simulator/cleanup.js";
import { fleetDoesNotFit, openFileLimit } from "../simulator/fd-limit.js";
import { blocksInPart, workerCount, workerPart } from "../simulator/part.js";
import type { FleetPart } from "../simulator/report.js";
import { type ViewSource, runnerSource } from "../simulator/tui/view.js";
import { WorkerPool } from "../simulator/workers/pool.js";
import { runWorker } from "../simulator/workers/worker.js";
import type { SimFlags } from "./sim.js";
import { ParentSigints, takeParentSigints } from "./respawn.js";
import { target } from "./sim-target.js";

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
  if (f.rateLimit !== undefined) doc.rate_limit = { requests_per_s: f.rateLimit };
  if (f.cleanup) doc.cleanup = true;
  if (f.cleanupTimeout !== undefined) doc.cleanup_timeout_s = f.cleanupTimeout;
  return validateScenario(doc);
}

async function runTui(source: ViewSource, finished: Promise<Report>): Promise<Report> {
  const { render } = await import("ink");
  const { App } = await import("../simulator/tui/app.js");
  const ui = render(createElement(App, { source }), { exitOnCtrlC: false });
  try {
    return await finished;
  } finally {
    ui.rerender(createElement(App, { source }));
    ui.unmount();
  }
}

interface Outcome {
  report: Report;
  cleanup: CleanupResult | null;
}

/**
 * The exit code of a run stopped before its measured time ended, by the signal (or the TUI's q or
 * Ctrl-C, which a terminal in raw mode delivers as keys): 128 + the signal's number, the shell's
 * convention, which `sim replay` follows too. Such a run is not a pass whatever its thresholds say:
 * a CI job interrupted or cancelled must not go green on a partial measurement.
 */
const INTERRUPTED_EXIT = { SIGINT: 130, SIGTERM: 143 } as const;
type Interruption = keyof typeof INTERRUPTED_EXIT;

/**
 * What the first Ctrl-C (or SIGTERM) says, on stderr: what the stop waits for and how long at most.
 * The drain waits up to --drain for the activations, readings and commands in flight (against a hung
 * server, that whole time, which would otherwise pass in silence), and CALLBACK_DRAIN_MS more for callback
 * deliveries when callbacks are registered (runner.ts, drain()); the cleanup, after it, has a bound of
 * its own (cleanup_timeout_s).
 */
function stoppingLine(scenario: LoadedScenario, drainS: number): string {
  const callbacks = scenario.callbacks.devices > 0;
  const what = callbacks ? "activations, readings, commands and callbacks" : "activations, readings and commands";
  return `stopping: waiting up to ${drainS + (callbacks ? CALLBACK_DRAIN_MS / 1000 : 0)} s for the ${what} in flight${scenario.cleanup ? `, then cleaning up for up to ${scenario.cleanup_timeout_s} s` : ""} (Ctrl-C again to quit at once)`;
}

/** Whether a stop requested in this phase cuts nothing short: the measured time is over, the drain runs on. */
const measuredTimeOver = (phase: RunPhase): boolean => phase === "draining" || phase === "done";
/** Whether a stop requested in this phase comes during the start-up: before the measured time began. */
const startingUp = (phase: RunPhase): boolean => phase === "starting" || phase === "ramping" || phase === "warmup";

export async function runSim(flags: SimFlags): Promise<void> {
  const { targets, token } = target(flags);
  let scenario: LoadedScenario;
  try {
    scenario = buildScenario(flags);
  } catch (err) {
    process.stderr.write(`blockkit sim: ${(err as Error).message}\n`);
    process.exit(2);
  }
  const first = targets[0] as (typeof targets)[number];
  const runnerFor = (part: FleetPart | null): SimRunner =>
    new SimRunner({
      scenario,
      part,
      baseUrl: first.baseUrl,
      streamUrl: first.streamUrl,
      targets,
      token,
      callbackHost: flags.callbackHost,
      callbackPublicHost: flags.callbackPublicHost,
      drainTimeoutMs: flags.drain * 1000,
      transport: flags.transport,
    });
  if (flags.workerPart) {
    await runWorker(runnerFor(flags.workerPart));
    return;
  }
  const shard = flags.shard ?? null;
  const workers = workerCount(blocksInPart(scenario.blocks.count, shard), flags.workers);
  const parts = workers > 1 ? Array.from({ length: workers }, (_v, w) => workerPart(shard ?? { index: 0, count: 1 }, w, workers)) : [shard];
  const total = blocksInPart(scenario.blocks.count, shard);
  const refusal = fleetDoesNotFit(Math.max(...parts.map((p) => blocksInPart(scenario.blocks.count, p))), targets.length, openFileLimit(), { blocks: total, workers });
  if (refusal) {
    process.stderr.write(`blockkit sim: ${refusal}\n`);
    process.exit(2);
  }
  const prefix = nodePrefix(scenario.blocks.node_id, scenario.seed);
  const terminal = !flags.headless && process.stdout.isTTY === true && process.stdin.isTTY === true;
  // Ink draws only its last frame when it believes it runs in CI ($CI or $CONTINUOUS_INTEGRATION set,
  // and not "0" or "false": the is-in-ci package it uses), so a TUI there would stay blank for the
  // whole run: a terminal in a CI job gets the progress lines instead.
  const tui = terminal && !isInCi;
  if (terminal && isInCi) process.stderr.write("CI is set: progress lines instead of the TUI, which ink does not draw in CI (CI=0 turns it back on)\n");
  let stop: () => void = () => undefined;
  let over: () => boolean = () => false;
  let early: () => boolean = () => true;
  /** The cleanup under way, what it has done and left so far (a worker's is its own, not seen here). */
  let cleanupNow: () => CleanupResult | null = () => null;
  const retry = `blockkit sim cleanup --node-prefix ${prefix}`;
  // The first signal stops the run (drain, report, cleanup). Only a second Ctrl-C quits at once:
  // further SIGTERMs are the same request (`timeout` signals its child and then the whole group,
  // and the respawning parent forwards its own, so one stop arrives here as two or three SIGTERMs).
  let stopping = false;
  let interrupted: Interruption | null = null;
  let duringStartUp = false;
  const interrupt = (how: Interruption): void => {
    stopping = true;
    if (interrupted === null && !over()) {
      interrupted = how;
      duringStartUp = early();
    }
    stop();
  };
  // Until start() has returned, a stop request may reach nothing that can take it yet (the runner's
  // run loop, a worker's message listener, not there yet): it is asked again once the run can take it.
  const startedNow = (): void => {
    if (stopping) stop();
  };
  // A run that failed once interrupted (a worker the group's Ctrl-C reached before its handlers) was interrupted.
  const failed = (err: unknown): number => {
    if (interrupted === null) {
      process.stderr.write(`blockkit sim: the run failed: ${(err as Error).message}\n`);
      return 3;
    }
    process.stderr.write(`interrupted (${interrupted})${duringStartUp ? " during start-up" : ""}, then: ${(err as Error).message}: not a pass, exit ${INTERRUPTED_EXIT[interrupted]}\n`);
    return INTERRUPTED_EXIT[interrupted];
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      if (signal !== "SIGINT") return;
      // During the cleanup, what it leaves is named as at its time bound; before it, all of it is left.
      const underWay = cleanupNow();
      if (underWay) for (const line of cleanupLines(underWay, retry)) process.stderr.write(`${line}\n`);
      else if (scenario.cleanup) process.stderr.write(`blockkit sim: quit before the cleanup; remove the leftovers with: ${retry}\n`);
      process.exit(130);
    }
    process.stderr.write(`${stoppingLine(scenario, flags.drain)}\n`);
    interrupt(signal === "SIGINT" ? "SIGINT" : "SIGTERM");
  };
  // The TUI's q and Ctrl-C (keys in raw mode, not signals) are the same request as a Ctrl-C.
  const quitIsCtrlC = (source: ViewSource): ViewSource => ({ ...source, quit: () => interrupt("SIGINT") });
  const sigints = new ParentSigints();
  process.on("SIGINT", () => {
    sigints.direct(performance.now());
    onSignal("SIGINT");
  });
  process.on("SIGTERM", onSignal);
  // A SIGINT sent to the respawning parent alone (respawn.ts) is a Ctrl-C, a second one included;
  // the echo of the terminal's Ctrl-C, which reached this process too, is not.
  takeParentSigints(() => {
    if (sigints.forwarded(performance.now())) onSignal("SIGINT");
  });
  if (!tui) process.stderr.write(`starting: ${total} blocks${workers > 1 ? ` in ${workers} worker processes` : ""}\n`);
  let outcome: Outcome;
  if (workers > 1) {
    const pool = new WorkerPool({ args: process.argv.slice(2), parts: parts as FleetPart[], shard });
    stop = () => pool.requestStop();
    over = () => pool.phases().every(measuredTimeOver);
    early = () => pool.phases().every(startingUp);
    try {
      await pool.start();
      startedNow();
      const report = tui ? await runTui(quitIsCtrlC(pool.source()), pool.finished) : await runHeadless(pool, { progressMs: flags.progress * 1000 });
      outcome = { report, cleanup: pool.cleanupResult() };
    } catch (err) {
      pool.kill();
      process.exit(failed(err));
    }
  } else {
    const runner = runnerFor(shard);
    stop = () => runner.requestStop();
    over = () => measuredTimeOver(runner.phase);
    early = () => startingUp(runner.phase);
    cleanupNow = () => runner.cleanupProgress?.snapshot("quit") ?? null;
    try {
      await runner.start();
      startedNow();
      const report = tui ? await runTui(quitIsCtrlC(runnerSource(runner)), runner.finished) : await runHeadless(runner, { progressMs: flags.progress * 1000 });
      await runner.stop();
      outcome = { report, cleanup: runner.cleanupResult };
    } catch (err) {
      await runner.stop().catch(() => undefined);
      process.exit(failed(err));
    }
  }
  const { report, cleanup } = outcome;
  if (interrupted !== null) {
    // The report says so too: a shard's file merged later (`sim merge`) must not make a pass of it.
    report.interrupted = { signal: interrupted, during_start_up: duringStartUp };
    report.passed = false;
  }
  if (flags.report) writeReport(flags.report, report);
  if (workers > 1) process.stderr.write(`${workers} worker processes, ${parts.map((p) => `part ${p?.index}/${p?.count}`).join(", ")}\n`);
  // A shard's thresholds speak of the whole fleet: `sim merge` checks them on the merged reports.
  for (const line of summaryLines(report)) if (!shard || !line.startsWith("threshold ")) process.stderr.write(`${line}\n`);
  if (cleanup) for (const line of cleanupLines(cleanup, retry)) process.stderr.write(`${line}\n`);
  if (interrupted !== null) {
    const when = duringStartUp ? "during start-up, before the measured time" : `after ${report.duration_s} of ${scenario.duration_s} s measured`;
    process.stderr.write(`interrupted (${interrupted}) ${when}: not a pass, exit ${INTERRUPTED_EXIT[interrupted]}\n`);
    process.exit(INTERRUPTED_EXIT[interrupted]);
  }
  if (shard) {
    process.stderr.write(`shard ${shard.index}/${shard.count}: the thresholds are checked on the merge (blockkit sim merge REPORT…)\n`);
    process.exit(report.blocks.activated > 0 ? 0 : 1);
  }
  process.exit(report.passed ? 0 : 1);
}
