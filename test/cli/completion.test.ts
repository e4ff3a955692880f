import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildProgram, runCli } from "../../cli/program.js";
import { allCommands, subPath } from "../../cli/help.js";

/** zsh and fish are installed by .ci/run (need_apt); bash is always there. */
describe("blockkit completion", () => {
  let dir: string;
  let home: string;
  const scripts: Record<string, string> = {};
  const G1 = "ABCDEF123456_0_0_9";
  const G2 = "ABCDEF123456_0_0_1002";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-cli-completion-"));
    home = join(dir, "home");
    const cache = join(home, ".cache", "blockkit");
    mkdirSync(cache, { recursive: true });
    writeFileSync(join(cache, "guids"), `${G1}\n${G2}\n`);
    writeFileSync(join(cache, "nodeids"), "ABCDEF123456\n");
    writeFileSync(join(cache, "profiles"), "home\nlab\n");
    for (const shell of ["bash", "zsh", "fish"]) {
      let out = "";
      const code = await runCli(["node", "blockkit", "completion", shell], {
        stdout: (t) => (out += t),
        stderr: () => {},
        env: { HOME: home },
        readStdin: () => Promise.resolve(""),
      });
      expect(code).toBe(0);
      scripts[shell] = join(dir, `blockkit.${shell}`);
      writeFileSync(scripts[shell] ?? "", out);
    }
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const run = (file: string, args: string[], script: string): string[] =>
    execFileSync(file, [...args, script], { env: { PATH: process.env.PATH, HOME: home }, encoding: "utf8", timeout: 10_000 })
      .split("\n")
      .filter((l) => l !== "");

  it("prints scripts that pass bash -n, zsh -n and fish -n, and name every command", () => {
    execFileSync("bash", ["-n", scripts.bash ?? ""]);
    execFileSync("zsh", ["-n", scripts.zsh ?? ""]);
    execFileSync("fish", ["-n", scripts.fish ?? ""]);
    const paths = allCommands(buildProgram()).map(subPath).filter((p) => p !== "");
    expect(paths).toEqual(expect.arrayContaining(["devices", "device data", "login", "status", "completion", "rules add"]));
    for (const shell of ["bash", "zsh"]) {
      const text = execFileSync("cat", [scripts[shell] ?? ""], { encoding: "utf8" });
      for (const p of paths) expect(text, `${shell}: ${p}`).toContain(`"${p}")`);
      // A hidden option (the worker pool's own) is no more offered than --help lists it.
      expect(text, shell).not.toContain("--worker-part");
    }
  });

  it("bash completes commands, options, option values, cached GUIDs and profile names", () => {
    const cases: [string[], string][] = [
      [["blockkit", ""], "devices"],
      [["blockkit", "device", ""], "show set rm heartbeat data"],
      [["blockkit", "device", "show", ""], `${G1} ${G2}`],
      [["blockkit", "device", "data", "--from", "-1h", "ABC"], `${G1} ${G2}`],
      [["blockkit", "blocks", "show", ""], "ABCDEF123456"],
      [["blockkit", "devices", "--profile", ""], "home lab"],
      [["blockkit", "devices", "-o", ""], "table json yaml"],
      [["blockkit", "device", "data", "--ch"], "--chart"],
      [["blockkit", "completion", ""], "bash zsh fish"],
      // A sim sub-command is offered the run options it takes, not those it refuses.
      [["blockkit", "sim", "merge", "--"], "--report --help"],
      [["blockkit", "sim", "nodes", "--d"], "--duration --devices"],
      [["blockkit", "sim", "--d"], "--devices --duration --drain"],
    ];
    const body = cases
      .map(([words]) => `COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _blockkit; echo "\${COMPREPLY[*]}"`)
      .join("\n");
    const probe = join(dir, "probe.bash");
    writeFileSync(probe, `source ${scripts.bash}\n${body}\n`);
    const got = run("bash", [], probe);
    cases.forEach(([words, want], i) => {
      if (words[words.length - 1] === "" && words.length === 2) expect(got[i]?.split(" "), words.join(" ")).toContain(want);
      else expect(got[i], words.join(" ")).toBe(want);
    });
  });

  it("zsh loads the script under compinit and completes GUIDs and option values", () => {
    const probe = join(dir, "probe.zsh");
    writeFileSync(
      probe,
      [
        `autoload -Uz compinit; compinit -u -d ${join(dir, "zcompdump")}`,
        `source ${scripts.zsh}`,
        'print -r -- "registered $_comps[blockkit]"',
        // Outside a completion widget compadd cannot run: print what the function would offer.
        'compadd() { shift; print -r -- "$*" }',
        't() { words=("$@"); CURRENT=$#; _blockkit }',
        't blockkit device show ""',
        't blockkit devices --profile ""',
        't blockkit device data x --fn ""',
      ].join("\n"),
    );
    expect(run("zsh", ["-f"], probe)).toEqual(["registered _blockkit", `${G1} ${G2}`, "home lab", "mean sum min max stddev ss count"]);
  });

  it("fish loads the script and completes sub-commands, GUIDs and profiles", () => {
    const probe = join(dir, "probe.fish");
    writeFileSync(
      probe,
      [
        `source ${scripts.fish}`,
        ...["blockkit device ", "blockkit device show ", "blockkit devices --profile "].map((l) => `complete -C '${l}' | string join ' '`),
      ].join("\n"),
    );
    expect(run("fish", ["-N"], probe)).toEqual(["data heartbeat rm set show", `${G1} ${G2}`, "home lab"]);
  });
});
