/**
 * What every API command shares: the injected I/O, the --server/--token/--json options with their
 * BLOCKKIT_SERVER/BLOCKKIT_TOKEN fallbacks, the typed client, and the printing of results.
 */
import type { Command } from "commander";
import { ApiClient } from "../../protocol/api-client.js";
import { url } from "../options.js";
import { restRoot } from "../sim-target.js";

/** Where a command writes and what it reads; the real process's by default, injected in tests. */
export interface CliIO {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
  /** The whole of standard input (for `rules add -`). */
  readStdin(): Promise<string>;
}

/** A refusal of the command line's own input (exit code 2) or a failure with its own code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
    this.name = "CliError";
  }
}

export interface ApiFlags {
  server?: string;
  token?: string;
  json?: boolean;
  stream?: string;
}

/** Adds --server, --token and --json to a command group; its sub-commands read them with optsWithGlobals(). */
export function apiOptions(cmd: Command): Command {
  return cmd
    .option("--server <url>", "server root or REST root, http://HOST:PORT[/rest/v0] (default: $BLOCKKIT_SERVER)", url)
    .option("--token <token>", "user access token (default: $BLOCKKIT_TOKEN)")
    .option("--json", "print the raw `data` of the answer as JSON");
}

/** The context of one API command: its client, its output mode and its writers. */
export class ApiContext {
  readonly client: ApiClient;
  readonly json: boolean;

  constructor(
    readonly io: CliIO,
    flags: ApiFlags,
  ) {
    const server = flags.server ?? io.env.BLOCKKIT_SERVER;
    const token = flags.token ?? io.env.BLOCKKIT_TOKEN;
    if (!server) throw new CliError("give --server URL or set BLOCKKIT_SERVER (the server's root or REST root)");
    try {
      url(server);
    } catch (err) {
      throw new CliError(`${flags.server ? "--server" : "BLOCKKIT_SERVER"}: ${(err as Error).message}`);
    }
    if (!token) throw new CliError("give --token T or set BLOCKKIT_TOKEN (a user access token)");
    this.json = flags.json === true;
    this.client = new ApiClient({ baseUrl: restRoot(server), streamUrl: flags.stream, token });
  }

  /** Prints `data` as JSON with --json, otherwise the readable lines. */
  print(data: unknown, human: () => string[]): void {
    if (this.json) this.io.stdout(`${JSON.stringify(data ?? null)}\n`);
    else for (const line of human()) this.io.stdout(`${line}\n`);
  }

  /** A command that answers no data: `null` with --json, the confirmation line otherwise. */
  done(line: string): void {
    this.print(null, () => [line]);
  }
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

/** Epoch ms as ISO text, or "-" when absent. */
export function when(ms: number | null | undefined): string {
  return typeof ms === "number" && Number.isFinite(ms) ? new Date(ms).toISOString() : "-";
}

/** Left-aligned columns separated by two spaces; the header row first. */
export function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)];
}
