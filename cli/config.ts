/**
 * The command line's profiles: `$XDG_CONFIG_HOME/blockkit/config.yaml` (default
 * `~/.config/blockkit/config.yaml`), as kubectl keeps its contexts. The file holds tokens, so it is
 * written 0600 in a 0700 directory, through a temporary file and a rename (never half-written).
 *
 * ```yaml
 * current: default
 * profiles:
 *   default: { server: http://127.0.0.1:8000, token: …, user: admin }
 * ```
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { parse, stringify } from "yaml";
import { CliError } from "./errors.js";

export interface Profile {
  server: string;
  token: string;
  /** Who the token belongs to, as the server said at login. */
  user?: string;
}

export interface CliConfig {
  current?: string;
  profiles: Record<string, Profile>;
}

export const PROFILE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** The environment's home: HOME when set (tests set it), else the account's. */
function home(env: NodeJS.ProcessEnv): string {
  return env.HOME || homedir();
}

export function configPath(env: NodeJS.ProcessEnv): string {
  return join(env.XDG_CONFIG_HOME || join(home(env), ".config"), "blockkit", "config.yaml");
}

/** Where listings are cached for shell completion (`$XDG_CACHE_HOME/blockkit`, default `~/.cache/blockkit`). */
export function cacheDir(env: NodeJS.ProcessEnv): string {
  return join(env.XDG_CACHE_HOME || join(home(env), ".cache"), "blockkit");
}

function invalid(path: string, what: string): CliError {
  return new CliError(`${path}: ${what}`);
}

/** Checks a parsed config document; every refusal names the file and the field. */
function validate(path: string, doc: unknown): CliConfig {
  if (doc === null || doc === undefined) return { profiles: {} };
  if (typeof doc !== "object" || Array.isArray(doc)) throw invalid(path, "is not a mapping");
  const { current, profiles } = doc as { current?: unknown; profiles?: unknown };
  if (current !== undefined && current !== null && typeof current !== "string") throw invalid(path, "current must be a profile name");
  const out: CliConfig = { profiles: {} };
  if (typeof current === "string") out.current = current;
  if (profiles === undefined || profiles === null) return out;
  if (typeof profiles !== "object" || Array.isArray(profiles)) throw invalid(path, "profiles must be a mapping of name to {server, token}");
  for (const [name, p] of Object.entries(profiles as Record<string, unknown>)) {
    if (!PROFILE_NAME.test(name)) throw invalid(path, `profiles.${name}: not a profile name (1-64 letters, digits, _ . -)`);
    const { server, token, user } = (p ?? {}) as Record<string, unknown>;
    if (typeof server !== "string" || server === "") throw invalid(path, `profiles.${name}.server must be a URL`);
    if (typeof token !== "string" || token === "") throw invalid(path, `profiles.${name}.token must be a string`);
    out.profiles[name] = { server, token, ...(typeof user === "string" ? { user } : {}) };
  }
  return out;
}

/** The profiles on disk; none when the file does not exist. A file others can read is used, with a warning. */
export function loadConfig(env: NodeJS.ProcessEnv, warn: (line: string) => void = () => {}): CliConfig {
  const path = configPath(env);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { profiles: {} };
    throw new CliError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 1);
  }
  if ((statSync(path).mode & 0o077) !== 0) warn(`blockkit: warning: ${path} holds tokens and is readable by others (chmod 600 it)`);
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw invalid(path, `not valid YAML: ${(err as Error).message.split("\n")[0] ?? ""}`);
  }
  return validate(path, doc);
}

/** Writes the profiles: the directory 0700, the file 0600, replaced in one rename. */
export function saveConfig(env: NodeJS.ProcessEnv, config: CliConfig): string {
  const path = configPath(env);
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const tmp = `${path}.${process.pid}.tmp`;
  const doc: CliConfig = config.current === undefined ? { profiles: config.profiles } : { current: config.current, profiles: config.profiles };
  writeFileSync(tmp, stringify(doc), { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
  return path;
}

/** Writes `lines` to a file of the completion cache (best effort: completion is a convenience). */
export function writeCache(env: NodeJS.ProcessEnv, name: string, lines: string[]): void {
  try {
    const dir = cacheDir(env);
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, name), lines.length === 0 ? "" : `${lines.join("\n")}\n`, { mode: 0o600 });
  } catch {
    // A read-only home must not fail the listing that was asked for.
  }
}
