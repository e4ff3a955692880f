/**
 * The sub-commands of `blockkit sim` refuse the options of a sim run they do not read (commander gives
 * them to `sim` wherever they stand on the line, so they used to be dropped silently), and take the
 * ones they read. The program runs in-process; each command's action is replaced by one that records
 * the options it would have worked with, since the real ones exit the process or start fleets.
 */
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { commandPath } from "../../cli/api/context.js";
import { allCommands } from "../../cli/help.js";
import { buildProgram, runCli } from "../../cli/program.js";

interface Outcome {
  code: number;
  stderr: string;
  /** The options the command's action got (with sim's), or null when it did not run. */
  ran: Record<string, unknown> | null;
}

async function run(...args: string[]): Promise<Outcome> {
  let stderr = "";
  let ran: Record<string, unknown> | null = null;
  const io = { stdout: () => {}, stderr: (t: string) => void (stderr += t), env: {}, readStdin: () => Promise.resolve("") };
  const program = buildProgram(io);
  for (const cmd of allCommands(program).filter((c) => commandPath(c).startsWith("blockkit sim"))) {
    cmd.action((...params: unknown[]) => {
      ran = (params.at(-1) as Command).optsWithGlobals();
    });
  }
  const code = await runCli(["node", "blockkit", ...args], io, program);
  return { code, stderr, ran };
}

describe("blockkit sim's sub-commands and the options of a sim run", () => {
  it("refuse a run option they do not read, before or after their name, naming it and themselves, exit 2", async () => {
    const cases: [string[], string][] = [
      [["sim", "merge", "--blocks", "3", "a.json"], "blockkit sim merge: does not take --blocks: it reads reports (give the report files)"],
      [["sim", "--blocks", "3", "--workers", "2", "merge", "a.json"], "blockkit sim merge: does not take --blocks, --workers: it reads reports"],
      [["sim", "merge", "a.json", "--server", "http://h:1"], "blockkit sim merge: does not take --server: "],
      [["sim", "cleanup", "--node-prefix", "SIM1N", "--stream", "http://h:2"], "blockkit sim cleanup: does not take --stream: "],
      [["sim", "cleanup", "--node-prefix", "SIM1N", "--cleanup"], "blockkit sim cleanup: does not take --cleanup: "],
      [["sim", "replay", "rec.jsonl", "--headless", "--shard", "0/2"], "blockkit sim replay: does not take --headless, --shard: "],
      [["sim", "replay", "rec.jsonl", "--transport", "undici"], "blockkit sim replay: does not take --transport: "],
      [["sim", "nodes", "--mqtt", "mqtt://h:1", "--blocks", "2"], "blockkit sim nodes: does not take --blocks: it emulates hardware nodes"],
      [["sim", "nodes", "--mqtt", "mqtt://h:1", "--stream", "http://h:2"], "blockkit sim nodes: does not take --stream: "],
    ];
    for (const [args, start] of cases) {
      const r = await run(...args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.ran, args.join(" ")).toBeNull();
      expect(r.stderr.startsWith(start), r.stderr).toBe(true);
      expect(r.stderr.split("\n"), r.stderr).toHaveLength(2);
    }
  });

  it("take the run options they read, with the values given", async () => {
    const merge = await run("sim", "merge", "a.json", "b.json", "--report", "m.json");
    expect(merge.code, merge.stderr).toBe(0);
    expect(merge.ran).toMatchObject({ report: "m.json" });
    const cleanup = await run("sim", "cleanup", "--node-prefix", "SIM1N", "--server", "http://h:1", "--token", "t", "--profile", "p");
    expect(cleanup.code, cleanup.stderr).toBe(0);
    expect(cleanup.ran).toMatchObject({ server: ["http://h:1"], token: "t", profile: "p", nodePrefix: "SIM1N" });
    const replay = await run("sim", "replay", "rec.jsonl", "--server", "http://h:1", "--stream", "http://h:2", "--token", "t", "--report", "r.json", "--instant", "--seed", "7");
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.ran).toMatchObject({ server: ["http://h:1"], stream: "http://h:2", report: "r.json", instant: true, seed: 7 });
    const nodes = await run(
      ...["sim", "nodes", "--mqtt", "mqtt://h:1", "--scenario", "s.yaml", "--devices", "3", "--rate", "2", "--seed", "7", "--commands", "0"],
      ...["--duration", "5", "--server", "http://h:1", "--token", "t", "--report", "n.json"],
    );
    expect(nodes.code, nodes.stderr).toBe(0);
    expect(nodes.ran).toMatchObject({ scenario: "s.yaml", devices: 3, rate: 2, seed: 7, commands: 0, duration: 5, report: "n.json", server: ["http://h:1"], token: "t" });
  });

  it("leave a sim run every option, and list under Global Options only the run options they read", async () => {
    const sim = await run("sim", "--blocks", "3", "--workers", "2", "--headless", "--stream", "http://h:2", "--report", "r.json");
    expect(sim.code, sim.stderr).toBe(0);
    expect(sim.ran).toMatchObject({ blocks: 3, workers: 2, headless: true, stream: "http://h:2", report: "r.json" });
    const program = buildProgram({ stdout: () => {}, stderr: () => {}, env: {}, readStdin: () => Promise.resolve("") });
    const nodes = allCommands(program).find((c) => commandPath(c) === "blockkit sim nodes") as Command;
    const global = nodes.createHelp().visibleGlobalOptions(nodes).map((o) => o.long);
    // Its --server, --token and --profile are its own, for one server: under sim's, its help said
    // "several: blocks are spread round robin over them", and a second --server was then refused.
    expect(global.sort()).toEqual(["--commands", "--devices", "--rate", "--report", "--scenario", "--seed"]);
    const server = nodes.options.find((o) => o.long === "--server");
    expect(server?.description).toMatch(/^server root or REST root/);
    expect(server?.description).not.toMatch(/several/);
    expect(nodes.options.map((o) => o.long)).toEqual(expect.arrayContaining(["--token", "--profile"]));
  });

  it("sim replay refuses --speed with --instant, which overrode it silently, exit 2", async () => {
    const r = await run("sim", "replay", "rec.jsonl", "--speed", "2", "--instant");
    expect(r.code).toBe(2);
    expect(r.ran).toBeNull();
    expect(r.stderr).toBe("blockkit sim replay: option '--instant' cannot be used with option '--speed <x>' (see 'blockkit sim replay --help')\n");
  });

  it("sim --help says that a shard's index counts from 0 (a user's --shard 2/2 was refused, and 1/2 was the second half)", () => {
    const program = buildProgram({ stdout: () => {}, stderr: () => {}, env: {}, readStdin: () => Promise.resolve("") });
    const sim = allCommands(program).find((c) => commandPath(c) === "blockkit sim") as Command;
    expect(sim.options.find((o) => o.long === "--shard")?.description).toMatch(/^run shard i of n of the scenario, i from 0 to n-1 /);
  });
});
