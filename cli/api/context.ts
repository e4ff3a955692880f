/**
 * What every API command shares: the injected I/O, the --server/--token/--profile options with
 * their environment and profile fallbacks (cli/target.ts), -o table|json|yaml, the typed client, and
 * the printing of results.
 */
import { type Command, InvalidArgumentError } from "commander";
import { stringify } from "yaml";
import { ApiClient } from "../../protocol/api-client.js";
import { type Target, type TargetFlags, normalizeServer, resolveTarget, restRoot } from "../target.js";

/** Where a command writes and what it reads; the real process's by default, injected in tests. */
export interface CliIO {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
  /** The whole of standard input (for `rules add -`). */
  readStdin(): Promise<string>;
  /** Calls `handler` once on Ctrl-C (SIGINT) or SIGTERM; returns a function that stops listening. For `watch`. */
  onInterrupt?(handler: () => void): () => void;
}

export { CliError } from "../errors.js";

export const OUTPUTS = ["table", "json", "yaml"] as const;
export type Output = (typeof OUTPUTS)[number];

export interface ApiFlags extends TargetFlags {
  output?: Output;
  json?: boolean;
  stream?: string;
}

/** A --server value: a URL, or HOST:PORT taken as http. */
export function serverOption(value: string): string {
  try {
    return normalizeServer(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

export function outputOption(value: string): Output {
  if (!(OUTPUTS as readonly string[]).includes(value)) throw new InvalidArgumentError(`"${value}" is not one of ${OUTPUTS.join(", ")}`);
  return value as Output;
}

/** Adds --server, --token, --profile, -o/--output and --json to a command; its sub-commands read them with optsWithGlobals(). */
export function apiOptions(cmd: Command): Command {
  return cmd
    .option("--server <url>", "server root or REST root, http://HOST:PORT[/rest/v0] (default: $BLOCKKIT_SERVER, then the profile's)", serverOption)
    .option("--token <token>", "user access token (default: $BLOCKKIT_TOKEN, then the profile's)")
    .option("--profile <name>", "the profile to use (default: $BLOCKKIT_PROFILE, then the current one)")
    .option("-o, --output <format>", `output format: ${OUTPUTS.join(", ")}`, outputOption)
    .option("--json", "the same as -o json: the raw `data` of the answer");
}

/** The context of one API command: its client, its target, its output mode and its writers. */
export class ApiContext {
  readonly client: ApiClient;
  readonly output: Output;
  readonly target: Target;

  constructor(
    readonly io: CliIO,
    flags: ApiFlags,
  ) {
    this.target = resolveTarget(flags, io.env, (line) => io.stderr(`${line}\n`));
    this.output = flags.json === true ? "json" : (flags.output ?? "table");
    this.client = new ApiClient({ baseUrl: restRoot(this.target.server), streamUrl: flags.stream, token: this.target.token });
  }

  /** Prints `data` as JSON or YAML with -o, otherwise the readable lines. */
  print(data: unknown, human: () => string[]): void {
    this.io.stdout(render(this.output, data, human));
  }

  /** A command that answers no data: `null` with -o json|yaml, the confirmation line otherwise. */
  done(line: string): void {
    this.print(null, () => [line]);
  }
}

/** The text of `data` in an output format; `human` gives the table's lines. */
export function render(output: Output, data: unknown, human: () => string[]): string {
  if (output === "json") return `${JSON.stringify(data ?? null)}\n`;
  if (output === "yaml") return stringify(data ?? null);
  return human()
    .map((line) => `${line}\n`)
    .join("");
}

/** The action of an API sub-command: `run` gets the context (from the flags of the command and its parents), the arguments and the command's own options. */
export function apiAction<A extends unknown[]>(
  io: CliIO,
  run: (ctx: ApiContext, ...args: A) => Promise<void>,
): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const ctx = new ApiContext(io, cmd.optsWithGlobals<ApiFlags>());
    await run(ctx, ...(args.slice(0, -1) as A));
  };
}

/** `blockkit device data` for the command `data` under `device`. */
export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/** Epoch ms as ISO text, or "-" when absent. */
export function when(ms: number | null | undefined): string {
  return typeof ms === "number" && Number.isFinite(ms) ? new Date(ms).toISOString() : "-";
}

/** Epoch ms as `YYYY-MM-DD HH:MM:SS` (UTC) for tables, or "-" when absent. */
export function shortWhen(ms: number | null | undefined): string {
  return typeof ms === "number" && Number.isFinite(ms) ? new Date(ms).toISOString().slice(0, 19).replace("T", " ") : "-";
}

/** The width tables fit in: an 80-column terminal. */
export const TABLE_WIDTH = 80;

function clip(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

/**
 * Left-aligned columns separated by two spaces; the header row first. When the rows are wider than
 * `width`, the widest column other than the first (the id to copy) is narrowed, its cells clipped
 * with "…", until they fit or every such column is down to 8.
 */
export function table(header: string[], rows: string[][], width = TABLE_WIDTH): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const total = (): number => widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1);
  while (total() > width) {
    let widest = -1;
    for (let i = 1; i < widths.length; i++) if ((widths[i] ?? 0) > 8 && (widest < 0 || (widths[i] ?? 0) > (widths[widest] ?? 0))) widest = i;
    if (widest < 0) break;
    widths[widest] = Math.max(8, (widths[widest] ?? 0) - (total() - width));
  }
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => {
        const w = widths[i] ?? 0;
        return i === cells.length - 1 ? clip(c, w) : clip(c, w).padEnd(w);
      })
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)];
}
