/** The `blockkit sim` run: scenario from flags or file, the fleet, the TUI or headless, the report. */
import { readFileSync } from "node:fs";
import { createElement } from "react";
import { parse as parseYaml } from "yaml";
import { runHeadless } from "../simulator/headless.js";
import { type Report, summaryLines, writeReport } from "../simulator/report.js";
import { SimRunner } from "../simulator/runner.js";
import { overrideWithFlags, scenarioFromFlags } from "../simulator/scenario/defaults.js";
import { type LoadedScenario, ScenarioError, validateScenario } from "../simulator/scenario/parse.js";
import type { SimFlags } from "./sim.js";
import { restRoot, target } from "./sim-target.js";

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

export async function runSim(flags: SimFlags): Promise<void> {
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
}
