import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { commandPath } from "../../cli/api/context.js";
import { allCommands, oneLine } from "../../cli/help.js";
import { buildProgram, runCli } from "../../cli/program.js";

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
