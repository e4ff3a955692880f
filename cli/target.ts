/**
 * Which server and token a command uses: `--server`/`--token` first, then `$BLOCKKIT_SERVER`/
 * `$BLOCKKIT_TOKEN`, then the profile (`--profile`, `$BLOCKKIT_PROFILE`, or the current one).
 * A profile's token is never sent to another server than the profile's: with the server overridden,
 * the token must be given too.
 */
import { CliError } from "./errors.js";
import { type CliConfig, loadConfig } from "./config.js";

export interface TargetFlags {
  server?: string;
  token?: string;
  profile?: string;
}

export interface Target {
  /** The server's root or REST root, with a scheme. */
  server: string;
  token: string;
  /** The profile that gave the server or the token; null when flags and environment gave both. */
  profile: string | null;
}

/** `127.0.0.1:8000` → `http://127.0.0.1:8000`; a URL with a scheme is kept. Refuses what is not an http(s) URL. */
export function normalizeServer(value: string): string {
  const withScheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(value) ? value : `http://${value}`;
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    throw new CliError(`"${value}" is not a URL`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new CliError(`"${value}" is not an http or https URL`);
  return withScheme.replace(/\/+$/, "");
}

/** `--server` may be the root (`http://h:8000`) or the REST root (`…/rest/v0`); this is the REST root. */
export function restRoot(server: string): string {
  const s = server.replace(/\/+$/, "");
  return /\/rest\/v\d+$/.test(s) ? s : `${s}/rest/v0`;
}

/** The profile a command names (flag, then environment), or the current one. */
export function profileName(flags: TargetFlags, env: NodeJS.ProcessEnv, config: CliConfig): { name: string | undefined; named: boolean } {
  const named = flags.profile ?? (env.BLOCKKIT_PROFILE || undefined);
  return { name: named ?? config.current, named: named !== undefined };
}

/**
 * The server and token of a command (for the API commands and `blockkit sim`). Throws a CliError
 * (exit 2) naming what is missing. `env` defaults to the process's.
 */
export function resolveTarget(flags: TargetFlags, env: NodeJS.ProcessEnv = process.env, warn?: (line: string) => void): Target {
  const serverOverride = flags.server ?? (env.BLOCKKIT_SERVER || undefined);
  const tokenOverride = flags.token ?? (env.BLOCKKIT_TOKEN || undefined);
  const where = flags.server !== undefined ? "--server" : "BLOCKKIT_SERVER";
  if (serverOverride !== undefined && tokenOverride !== undefined && flags.profile === undefined) {
    return { server: normalizeOrName(where, serverOverride), token: tokenOverride, profile: null };
  }
  const config = loadConfig(env, warn);
  const { name, named } = profileName(flags, env, config);
  const profile = name === undefined ? undefined : config.profiles[name];
  if (named && !profile) throw new CliError(`no profile "${name}" (blockkit profiles lists them; blockkit login --profile ${name} adds it)`);
  const server = serverOverride === undefined ? profile?.server : normalizeOrName(where, serverOverride);
  if (server === undefined) throw new CliError("give --server URL, set BLOCKKIT_SERVER, or log in first: blockkit login --server URL --token T");
  const sameServer = profile !== undefined && restRoot(normalizeServer(profile.server)) === restRoot(server);
  const token = tokenOverride ?? (sameServer ? profile.token : undefined);
  if (token === undefined) {
    throw new CliError(
      profile && !sameServer
        ? `give --token T or set BLOCKKIT_TOKEN: profile "${name}" holds a token for ${profile.server}, not for ${server}`
        : "give --token T, set BLOCKKIT_TOKEN, or log in first: blockkit login --server URL --token T",
    );
  }
  return { server: normalizeServer(server), token, profile: profile ? (name ?? null) : null };
}

function normalizeOrName(where: string, value: string): string {
  try {
    return normalizeServer(value);
  } catch (err) {
    throw new CliError(`${where}: ${(err as Error).message}`);
  }
}
