/**
 * Help that teaches: an example under every command's `--help`, and usage errors in one line that
 * names the bad argument and points at `--help` (commander would print the message, or the whole
 * help text). Examples live here, keyed by command path, so that every command group's module stays
 * about its own work; a test walks the tree and fails for a command without a description or one.
 */
import type { Command } from "commander";
import { commandPath } from "./api/context.js";

const G = "ABCDEF123456_0_0_9";
const R = "ABCDEF123456_0_0_1002";

/** Examples by command path (without the leading `blockkit`). */
export const EXAMPLES: Record<string, string[]> = {
  "": ["blockkit login --server 127.0.0.1:8000 --token $TOKEN", "blockkit devices"],
  server: ["blockkit server --data ./data --port 8000"],
  openapi: ["blockkit openapi --out docs/openapi.json", "blockkit openapi --check docs/openapi.json"],
  users: ["blockkit users add alice --password 'correct horse battery'"],
  "users add": ["blockkit users add alice --password 'correct horse battery' --data ./data"],
  apps: ["blockkit apps add --user alice --name 'My app' --redirect-uri https://app.example/cb"],
  "apps add": ["blockkit apps add --user alice --name 'My app' --redirect-uri https://app.example/cb --data ./data"],
  gateway: ["blockkit gateway --server http://127.0.0.1:8000 --node-id ABCDEF123456 --serial /dev/ttyUSB0"],
  "mqtt-password": ["blockkit mqtt-password < kitchen-node-password.txt"],
  sim: ["blockkit sim --server http://127.0.0.1:8000 --token $TOKEN --blocks 10 --duration 30 --headless"],
  "sim cleanup": ["blockkit sim cleanup --server http://127.0.0.1:8000 --token $TOKEN --node-prefix SIM"],
  "sim merge": ["blockkit sim merge shard-0.json shard-1.json"],
  "sim nodes": ["blockkit sim nodes --mqtt mqtt://127.0.0.1:1883"],
  "users passwd": ["blockkit users passwd alice --data ./data"],
  "users token": ["blockkit users token alice --data ./data"],
  migrate: ["blockkit migrate --db postgres://blockkit@127.0.0.1/blockkit"],
  export: ["blockkit export --data ./data > dump"],
  backup: ["blockkit backup --data /var/lib/blockkit --out /var/backups/blockkit/blockkit-$(date +%F).db", "blockkit backup --check /var/backups/blockkit/blockkit-2026-11-25.db"],
  import: ["blockkit import --db postgres://blockkit@127.0.0.1/blockkit < dump"],
  "sim replay": ["blockkit sim replay frames.jsonl --server http://127.0.0.1:8000 --token $TOKEN"],
  login: ["blockkit login --server 127.0.0.1:8000 --token $TOKEN", "blockkit login --server https://hub.example --token $TOKEN --profile home"],
  logout: ["blockkit logout --profile home"],
  profiles: ["blockkit profiles"],
  "profiles use": ["blockkit profiles use home"],
  status: ["blockkit status", "blockkit status --profile home -o json"],
  devices: ["blockkit devices", "blockkit devices -o json | jq 'keys'"],
  device: [`blockkit device show ${R}`],
  "device show": [`blockkit device show ${R}`],
  "device set": [`blockkit device set ${R} --da 1`, `blockkit device set ${R} --name 'Porch light'`],
  "device rm": [`blockkit device rm ${R}`],
  "device heartbeat": [`blockkit device heartbeat ${G}`],
  "device data": [`blockkit device data ${G} --from -24h --to now --interval 1hour --chart`, `blockkit device data ${G} --from 2026-01-31 -o yaml`],
  blocks: ["blockkit blocks", "blockkit blocks claim ABCDEF123456"],
  "blocks claim": ["blockkit blocks claim ABCDEF123456"],
  "blocks show": ["blockkit blocks show ABCDEF123456"],
  "blocks rm": ["blockkit blocks rm ABCDEF123456"],
  rules: ["blockkit rules", "blockkit rules add porch.yaml"],
  "rules show": ["blockkit rules show 1"],
  "rules add": ["blockkit rules add porch.yaml", "cat porch.json | blockkit rules add -"],
  "rules update": ["blockkit rules update 1 porch.yaml"],
  "rules rm": ["blockkit rules rm 1"],
  "rules suspend": ["blockkit rules suspend 1"],
  "rules resume": ["blockkit rules resume 1"],
  subdevices: [`blockkit subdevices add ABCDEF123456_0_0_11 --category rf --type sensor --name Doorbell --data 010101`],
  "subdevices add": [`blockkit subdevices add ABCDEF123456_0_0_11 --category rf --type sensor --name Doorbell --data 010101`],
  "subdevices update": [`blockkit subdevices update ABCDEF123456_0_0_11 s0000001 --name 'Front door'`],
  "subdevices rm": [`blockkit subdevices rm ABCDEF123456_0_0_11 s0000001`],
  "subdevices data": [`blockkit subdevices data ABCDEF123456_0_0_11 s0000001 --from -7d --interval 1day`],
  callbacks: [`blockkit callbacks set ${G} https://example.org/hook`],
  "callbacks show": [`blockkit callbacks show ${G}`],
  "callbacks set": [`blockkit callbacks set ${G} https://example.org/hook`],
  "callbacks rm": [`blockkit callbacks rm ${G}`],
  camera: ["blockkit camera snapshot ABCDEF123456_0_0_1004 --out porch.jpg"],
  "camera snapshot": ["blockkit camera snapshot ABCDEF123456_0_0_1004 --out porch.jpg"],
  completion: ["blockkit completion bash > ~/.local/share/bash-completion/completions/blockkit", "blockkit completion fish > ~/.config/fish/completions/blockkit.fish"],
  watch: ["blockkit watch", `blockkit watch ${G} -o json`],
};

/** Every command of the tree, depth first, the root first. */
export function allCommands(root: Command): Command[] {
  const out: Command[] = [root];
  for (const c of root.commands) out.push(...allCommands(c));
  return out;
}

/** The path of a command below the root (`device data`); "" for the root. */
export function subPath(cmd: Command): string {
  return commandPath(cmd).split(" ").slice(1).join(" ");
}

/**
 * commander's message as one line: `error: option '--from <time>' argument 'x' is invalid. "x" is
 * not a time` becomes `--from: "x" is not a time`.
 */
export function oneLine(message: string): string {
  let m = message.replace(/^error:\s*/, "").replace(/\s*\n\s*/g, " ").trim();
  m = m.replace(/^option '(-[^', ]+)(?:, (--[^' ]+))?[^']*' argument '.*' is invalid\. /s, (_all, a: string, b?: string) => `${b ?? a}: `);
  m = m.replace(/^command-argument value '.*' is invalid for argument '([^']+)'\. /s, "<$1>: ");
  return m;
}

/** Adds the examples to the help texts and makes every usage error one line with the `--help` hint. */
export function teach(root: Command, writeErr: (text: string) => void): void {
  for (const cmd of allCommands(root)) {
    const path = commandPath(cmd);
    const examples = EXAMPLES[subPath(cmd)];
    if (examples) cmd.addHelpText("after", `\nExample${examples.length > 1 ? "s" : ""}:\n${examples.map((e) => `  $ ${e}`).join("\n")}\n`);
    cmd.showHelpAfterError(false);
    cmd.configureOutput({ outputError: (text) => writeErr(`${path}: ${oneLine(text)} (see '${path} --help')\n`) });
  }
}
