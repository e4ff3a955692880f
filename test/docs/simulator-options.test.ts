/**
 * docs/simulator.md names every option `blockkit sim --help` shows, so that a flag added to the
 * command line does not stay unknown to the page a newcomer reads; the sub-commands' own options may
 * be named on the page of the simulator's nodes and replay instead.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { buildProgram } from "../../cli/program.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const page = (name: string): string => readFileSync(`${root}docs/${name}`, "utf8");

/** The long flags a command's --help lists (hidden ones, such as a worker's, are not for users). */
function shownFlags(cmd: Command): string[] {
  const help = cmd.createHelp();
  return help.visibleOptions(cmd).flatMap((o) => (o.long === undefined || o.long === "--help" ? [] : [o.long]));
}

function unnamed(flags: string[], text: string): string[] {
  return flags.filter((flag) => !new RegExp(`${flag}(?![\\w-])`).test(text));
}

describe("the simulator's pages and its --help", () => {
  const program = buildProgram({ stdout: () => {}, stderr: () => {}, env: {}, readStdin: () => Promise.resolve("") });
  const sim = program.commands.find((c) => c.name() === "sim");

  it("docs/simulator.md names every option of blockkit sim", () => {
    expect(sim).toBeDefined();
    const flags = shownFlags(sim as Command);
    expect(flags).toContain("--shard");
    expect(unnamed(flags, page("simulator.md"))).toEqual([]);
  });

  it("docs/simulator.md or simulator-nodes.md names every option of its sub-commands", () => {
    const text = page("simulator.md") + page("simulator-nodes.md");
    const missing = (sim as Command).commands.flatMap((cmd) => unnamed(shownFlags(cmd), text).map((f) => `sim ${cmd.name()} ${f}`));
    expect((sim as Command).commands.map((c) => c.name()).sort()).toEqual(["cleanup", "merge", "nodes", "replay"]);
    expect(missing).toEqual([]);
  });
});
