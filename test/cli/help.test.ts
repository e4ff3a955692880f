import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { commandPath } from "../../cli/api/context.js";
import { allCommands, oneLine } from "../../cli/help.js";
import { buildProgram, runCli } from "../../cli/program.js";
import { ROOT } from "../helpers/process.js";

function capture(): { io: Parameters<typeof buildProgram>[0] & object; out: () => string; err: () => string } {
  let out = "";
  let err = "";
  return {
    io: {
      stdout: (t) => (out += t),
      stderr: (t) => (err += t),
      env: { HOME: "/nonexistent-blockkit-home" },
      readStdin: () => Promise.resolve(""),
    },
    out: () => out,
    err: () => err,
  };
}

describe("help that teaches", () => {
  it("gives every command a description and an example in its --help", () => {
    const c = capture();
    const program = buildProgram(c.io);
    const missing: string[] = [];
    for (const cmd of allCommands(program)) {
      let help = "";
      cmd.configureOutput({ writeOut: (t) => (help += t) });
      cmd.outputHelp();
      if (!cmd.description()) missing.push(`${commandPath(cmd)}: no description`);
      if (!/\nExamples?:\n {2}\$ blockkit/.test(help)) missing.push(`${commandPath(cmd)}: no example (add one to EXAMPLES in cli/help.ts)`);
    }
    expect(missing).toEqual([]);
  });

  it("prints a usage error as one line naming the bad argument and the --help hint, exit 2", async () => {
    const cases: [string[], string][] = [
      [["device", "data", "ABCDEF123456_0_0_9", "--interval", "3weeks"], 'blockkit device data: --interval: "3weeks" is not an interval'],
      [["device", "show", "nope"], 'blockkit device show: <guid>: "nope" is not a device GUID'],
      [["device", "show"], "blockkit device show: missing required argument 'guid'"],
      [["devices", "--bogus"], "blockkit devices: unknown option '--bogus'"],
      [["devices", "-o", "xml"], 'blockkit devices: --output: "xml" is not one of table, json, yaml'],
      [["rules", "show", "1", "2"], "blockkit rules show: too many arguments for 'show'"],
      [["frobnicate"], "blockkit: unknown command 'frobnicate'"],
      [["device", "set", "ABCDEF123456_0_0_1002", "--server", "h:1", "--token", "t"], "blockkit device set: give --da VALUE and/or --name NAME"],
      [["login", "--server", "ftp://x", "--token", "t"], 'blockkit login: --server: "ftp://x" is not an http or https URL'],
    ];
    for (const [args, start] of cases) {
      const c = capture();
      const code = await runCli(["node", "blockkit", ...args], c.io);
      expect(code, args.join(" ")).toBe(2);
      expect(c.out()).toBe("");
      const err = c.err();
      expect(err.split("\n"), args.join(" ")).toHaveLength(2);
      expect(err.startsWith(start), err).toBe(true);
      const command = start.slice(0, start.indexOf(":"));
      expect(err.endsWith(` (see '${command} --help')\n`), err).toBe(true);
    }
  });

  it("prints the version of package.json", async () => {
    const c = capture();
    expect(await runCli(["node", "blockkit", "--version"], c.io)).toBe(0);
    expect(c.out()).toBe(`${(JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version}\n`);
  });

  it("turns commander's messages into one line", () => {
    expect(oneLine("error: option '-o, --output <format>' argument 'x' is invalid. \"x\" is not one of a, b\n")).toBe('--output: "x" is not one of a, b');
    expect(oneLine("error: unknown option '--fro'\n(Did you mean --from?)\n")).toBe("unknown option '--fro' (Did you mean --from?)");
  });
});

describe("blockkit sim's target options", () => {
  /** The command's own options of its --help, on one line (commander wraps them at 80 columns). */
  function ownOptions(path: string): string {
    const program = buildProgram(capture().io);
    const cmd = allCommands(program).find((c) => commandPath(c) === path);
    if (!cmd) throw new Error(`no command ${path}`);
    let help = "";
    cmd.configureOutput({ writeOut: (t) => (help += t) });
    cmd.outputHelp();
    const own = help.slice(help.indexOf("Options:"), help.includes("Global Options:") ? help.indexOf("Global Options:") : undefined);
    return own.replace(/\s+/g, " ");
  }

  it("say what they fall back on, and the one-server sub-commands take one server", () => {
    const sim = ownOptions("blockkit sim");
    expect(sim).toMatch(/--server <url> .*\(default: \$BLOCKKIT_SERVER, then the profile's\); several: blocks are spread round robin/);
    expect(sim).toMatch(/--token <token> user access token \(default: \$BLOCKKIT_TOKEN, then the profile's\)/);
    for (const path of ["blockkit sim cleanup", "blockkit sim replay"]) {
      const own = ownOptions(path);
      expect(own, path).toMatch(/--server <url> .*\(default: \$BLOCKKIT_SERVER, then the profile's\)/);
      expect(own, path).not.toMatch(/round robin/);
    }
    // The cleanup sends no snapshot: no stream root to give.
    expect(ownOptions("blockkit sim cleanup")).not.toMatch(/--stream/);
  });

  it("refuses a second --server where one server is used, instead of ignoring it", () => {
    for (const args of [
      ["cleanup", "--node-prefix", "SIM1N"],
      ["replay", "frames.jsonl"],
      ["nodes", "--mqtt", "mqtt://127.0.0.1:9", "--gateway-node-id", "GATEWAY0000001"],
    ]) {
      const run = spawnSync(
        process.execPath,
        ["--import", "tsx", "cli/index.ts", "sim", ...args, "--server", "http://127.0.0.1:9", "--server", "http://127.0.0.1:10", "--token", "t0123456789"],
        { cwd: ROOT, encoding: "utf8", timeout: 20_000, env: { ...process.env, HOME: "/nonexistent-blockkit-home" } },
      );
      expect(run.status, args[0]).toBe(2);
      expect(run.stderr, args[0]).toMatch(new RegExp(`^blockkit sim ${args[0]}: give one --server`));
    }
  });
});

describe("the help of sim's sub-commands", () => {
  /** The whole --help text of a command, on one line. */
  function helpOf(path: string): string {
    const cmd = allCommands(buildProgram(capture().io)).find((c) => commandPath(c) === path);
    if (!cmd) throw new Error(`no command ${path}`);
    let help = "";
    cmd.configureOutput({ writeOut: (t) => (help += t) });
    cmd.outputHelp();
    return help.replace(/\s+/g, " ");
  }

  it("lists only the options merge, cleanup and replay read, not every option of a sim run", () => {
    const merge = helpOf("blockkit sim merge");
    expect(merge.match(/ --[a-z-]+/g)).toEqual([" --report", " --help"]);
    for (const path of ["blockkit sim cleanup", "blockkit sim replay"]) {
      const help = helpOf(path);
      expect(help, path).not.toMatch(/Global Options|--blocks|--workers|--shard/);
      expect(help, path).toMatch(/--server <url>/);
    }
    // sim's own --help is unchanged (docs/simulator.md is checked against it), and the API commands
    // still show the --server/--token of their group, which they read.
    expect(helpOf("blockkit sim")).toMatch(/--blocks <n> .*--shard <i\/n> .*--workers <n>/);
    expect(helpOf("blockkit device data")).toMatch(/Global Options: --server <url>/);
  });
});

describe("blockkit sim's defaults", () => {
  it("--help gives the default of each fleet flag, the one a run without it uses", async () => {
    const { scenarioFromFlags } = await import("../../simulator/scenario/defaults.js");
    const { validateScenario } = await import("../../simulator/scenario/parse.js");
    const s = validateScenario(scenarioFromFlags({}));
    const program = buildProgram(capture().io);
    const sim = allCommands(program).find((c) => commandPath(c) === "blockkit sim");
    let help = "";
    sim?.configureOutput({ writeOut: (t) => (help += t) });
    sim?.outputHelp();
    const text = help.replace(/\s+/g, " ");
    const shown = (flag: string): string | undefined => new RegExp(`${flag} <[^>]+> (?:(?! --[a-z]).)*?\\(default: ([^,;)]+)`).exec(text)?.[1];
    expect({
      blocks: shown("--blocks"),
      devices: shown("--devices"),
      rate: shown("--rate"),
      duration: shown("--duration"),
      seed: shown("--seed"),
      commands: shown("--commands"),
      callbacks: shown("--callbacks"),
      warmup: shown("--warmup"),
      cleanupTimeout: shown("--cleanup-timeout"),
    }).toEqual({
      blocks: String(s.blocks.count),
      devices: String(s.devices.length),
      rate: "1",
      duration: String(s.duration_s),
      seed: String(s.seed),
      commands: String(s.commands.rate),
      callbacks: String(s.callbacks.devices),
      warmup: String(s.warmup_s),
      cleanupTimeout: String(s.cleanup_timeout_s),
    });
  });
});

describe("blockkit server's stream port", () => {
  it("--help says what --port 0 does to it (the stream listens on a free port too, not on 1)", () => {
    const program = buildProgram(capture().io);
    const server = allCommands(program).find((c) => commandPath(c) === "blockkit server");
    let help = "";
    server?.configureOutput({ writeOut: (t) => (help += t) });
    server?.outputHelp();
    expect(help.replace(/\s+/g, " ")).toMatch(/--stream-port <port> camera stream port \(default: port \+ 1; with --port 0, a free port, shown as stream_url\)/);
    // And blockkit sim, whose cameras upload there, says where to find it.
    const sim = allCommands(program).find((c) => commandPath(c) === "blockkit sim");
    let simHelp = "";
    sim?.configureOutput({ writeOut: (t) => (simHelp += t) });
    sim?.outputHelp();
    expect(simHelp.replace(/\s+/g, " ")).toMatch(/--stream <url> stream root for camera snapshots \(default: server port \+ 1; a server on --port 0 prints its stream_url\)/);
  });
});
