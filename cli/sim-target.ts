/** Options shared by `blockkit sim` and `blockkit sim replay`: the servers and the user token. */
import { type Command, InvalidArgumentError } from "commander";
import { url } from "./options.js";
import { resolveTarget } from "./target.js";

/** `--server` may be the root (`http://h:8000`) or the REST root (`…/rest/v0`). */
export function restRoot(server: string): string {
  const s = server.replace(/\/+$/, "");
  return /\/rest\/v\d+$/.test(s) ? s : `${s}/rest/v0`;
}

/**
 * The stream root (camera snapshots) of a server: the server's port + 1 on the same host, as
 * `blockkit server` listens by default (8000 -> 8001).
 */
export function defaultStream(server: string): string {
  const u = new URL(restRoot(server));
  const port = u.port === "" ? (u.protocol === "https:" ? 443 : 80) : Number(u.port);
  return `${u.protocol}//${u.hostname.includes(":") ? `[${u.hostname.replace(/^\[|\]$/g, "")}]` : u.hostname}:${port + 1}`;
}

function servers(value: string, previous: string[] | undefined): string[] {
  url(value);
  if (previous?.includes(value)) throw new InvalidArgumentError(`"${value}" is given twice`);
  return [...(previous ?? []), value];
}

/** What a command does with its servers: spread blocks over several, send camera snapshots. */
export interface TargetUse {
  /** Several --server spread the blocks round robin (`blockkit sim`); otherwise one is taken. */
  several: boolean;
  /** The command's blocks upload snapshots, so it takes a stream root. */
  stream: boolean;
}

export function addTargetOptions(cmd: Command, use: TargetUse = { several: true, stream: true }): Command {
  const server = "server root or REST root, http://HOST:PORT[/rest/v0] (default: $BLOCKKIT_SERVER, then the profile's)";
  cmd.option("--server <url>", use.several ? `${server}; several: blocks are spread round robin over them` : server, servers);
  if (use.stream) cmd.option("--stream <url>", "stream root for camera snapshots (default: server port + 1; a server on --port 0 prints its stream_url)", url);
  return cmd
    .option("--token <token>", "user access token (default: $BLOCKKIT_TOKEN, then the profile's)")
    .option("--profile <name>", "the profile to use for server and token (default: $BLOCKKIT_PROFILE, then the current one)");
}

/** One server of the run: its REST root and its stream root. */
export interface SimTarget {
  baseUrl: string;
  streamUrl: string;
}

export interface TargetFlags {
  server?: string[] | string;
  stream?: string;
  token?: string;
  profile?: string;
}

/**
 * The servers and token of the flags, falling back on $BLOCKKIT_SERVER and $BLOCKKIT_TOKEN; throws
 * a TargetError naming what is missing.
 */
export function resolveTargets(flags: TargetFlags, env: NodeJS.ProcessEnv = process.env): { targets: SimTarget[]; token: string } {
  const list = typeof flags.server === "string" ? [flags.server] : (flags.server ?? []);
  if (flags.stream && list.length > 1) throw new TargetError("--stream names one stream root: with several --server, each server's port + 1 is used");
  const streamOf = (s: string): string => flags.stream ?? defaultStream(s);
  if (list.length > 1) {
    // Several servers of one cluster: one token for all, from the flag or the environment (a
    // profile's token belongs to its own server only).
    const token = flags.token ?? (env.BLOCKKIT_TOKEN || undefined);
    if (!token) throw new TargetError("give --token or set BLOCKKIT_TOKEN (a user access token valid on every --server)");
    return { targets: list.map((s) => ({ baseUrl: restRoot(s), streamUrl: streamOf(s) })), token };
  }
  // One server: the command line's own resolution (flags, environment, then the CLI's profiles).
  let t;
  try {
    t = resolveTarget({ server: list[0], token: flags.token, profile: flags.profile }, env);
  } catch (err) {
    throw new TargetError((err as Error).message);
  }
  return { targets: [{ baseUrl: restRoot(t.server), streamUrl: streamOf(t.server) }], token: t.token };
}

export class TargetError extends Error {}

/**
 * resolveTargets for a command line: prints the problem and exits with 2. A command that talks to
 * one server (`one`) refuses several rather than use the first and leave the others' blocks.
 */
export function target(flags: TargetFlags, command = "blockkit sim", one = false): { targets: SimTarget[]; token: string } {
  try {
    if (one && Array.isArray(flags.server) && flags.server.length > 1) {
      throw new TargetError(`give one --server (it works against one server; with instances of one cluster, any of them)`);
    }
    return resolveTargets(flags);
  } catch (err) {
    process.stderr.write(`${command}: ${(err as Error).message}\n`);
    process.exit(2);
  }
}
