/** The `blockkit sim` run: scenario from flags or file, the fleet, the TUI or headless, the report. */
import { readFileSync } from "node:fs";
import { createElement } from "react";
import { parse as parseYaml } from "yaml";
import { runHeadless } from "../simulator/headless.js";
import { type Report, summaryLines, writeReport } from "../simulator/report.js";
import { SimRunner } from "../simulator/runner.js";
import { overrideWithFlags, scenarioFromFlags } from "../simulator/scenario/defaults.js";
import { type LoadedScenario, ScenarioError, validateScenario } from "../simulator/scenario/parse.js";
import { fleetDoesNotFit, openFileLimit } from "../simulator/fd-limit.js";
import { nodePrefix } from "../simulator/cleanup.js";
import type { SimFlags } from "./sim.js";
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
  if (f.cleanup) doc.cleanup = true;
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

export async function runSim(flags: SimFlags): Promise<void> {
  const { targets, token } = target(flags);
  let scenario: LoadedScenario;
  try {
    scenario = buildScenario(flags);
  } catch (err) {
    process.stderr.write(`blockkit sim: ${(err as Error).message}\n`);
    process.exit(2);
  }
  const refusal = fleetDoesNotFit(scenario.blocks.count, targets.length, openFileLimit());
  if (refusal) {
    process.stderr.write(`blockkit sim: ${refusal}\n`);
    process.exit(2);
  }
  const first = targets[0] as (typeof targets)[number];
  const runner = new SimRunner({
    scenario,
    baseUrl: first.baseUrl,
    streamUrl: first.streamUrl,
    targets,
    token,
    callbackHost: flags.callbackHost,
    callbackPublicHost: flags.callbackPublicHost,
    drainTimeoutMs: flags.drain * 1000,
  });
  const prefix = nodePrefix(scenario.blocks.node_id, scenario.seed);
  let signals = 0;
  const onSignal = (): void => {
    if (++signals > 1) {
      if (scenario.cleanup) process.stderr.write(`blockkit sim: quit before the cleanup; remove the leftovers with: blockkit sim cleanup --node-prefix ${prefix}\n`);
      process.exit(130);
    }
    if (scenario.cleanup) process.stderr.write("stopping: draining, then cleaning up (Ctrl-C again to quit at once)\n");
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
  const c = runner.cleanupResult;
  if (c) {
    process.stderr.write(`cleanup: ${c.blocks} blocks unpaired, ${c.callbacks} callbacks removed${c.failed.length > 0 ? `, ${c.failed.length} failed` : ""}\n`);
    for (const f of c.failed.slice(0, 10)) process.stderr.write(`cleanup failed: ${f}\n`);
    if (c.failed.length > 0) process.stderr.write(`retry with: blockkit sim cleanup --node-prefix ${prefix}\n`);
  }
  process.exit(report.passed ? 0 : 1);
}
