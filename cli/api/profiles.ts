/** `blockkit login`, `logout`, `profiles [use NAME]`: the saved servers and tokens (cli/config.ts). */
import { type Command, InvalidArgumentError } from "commander";
import { ApiClient, ApiError } from "../../protocol/api-client.js";
import type { UserJson } from "../../protocol/api-types.js";
import { PROFILE_NAME, loadConfig, saveConfig, writeCache } from "../config.js";
import { CliError } from "../errors.js";
import { restRoot } from "../target.js";
import { type CliIO, type Output, outputOption, render, serverOption, table } from "./context.js";

function profileOption(value: string): string {
  if (!PROFILE_NAME.test(value)) throw new InvalidArgumentError(`"${value}" is not a profile name (1-64 letters, digits, _ . -)`);
  return value;
}

function outputOf(flags: { output?: Output; json?: boolean }): Output {
  return flags.json === true ? "json" : (flags.output ?? "table");
}

/** Keeps the completion cache's list of profile names in step with the file. */
function cacheNames(io: CliIO, names: string[]): void {
  writeCache(io.env, "profiles", names.sort());
}

export function registerProfiles(program: Command, io: CliIO): void {
  program
    .command("login")
    .description("check a token against a server, then save both as a profile (and make it the current one)")
    .option("--server <url>", "server root, http://HOST:PORT (a URL without scheme is http) (default: $BLOCKKIT_SERVER)", serverOption)
    .option("--token <token>", "user access token (default: $BLOCKKIT_TOKEN)")
    .option("--profile <name>", "the profile's name", profileOption, "default")
    .option("-o, --output <format>", "output format: table, json, yaml", outputOption)
    .option("--json", "the same as -o json")
    .action(async (flags: { server?: string; token?: string; profile: string; output?: Output; json?: boolean }) => {
      const server = flags.server ?? (io.env.BLOCKKIT_SERVER ? serverOption(io.env.BLOCKKIT_SERVER) : undefined);
      const token = flags.token ?? (io.env.BLOCKKIT_TOKEN || undefined);
      if (!server) throw new CliError("give --server URL (the server's root, e.g. http://127.0.0.1:8000)");
      if (!token) throw new CliError("give --token T (a user access token from the settings page or `blockkit users add`)");
      let user: UserJson;
      try {
        user = await new ApiClient({ baseUrl: restRoot(server), token }).user();
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) throw new CliError(`${server} refused the token (401): nothing saved`, 1);
        throw err;
      }
      const config = loadConfig(io.env, (line) => io.stderr(`${line}\n`));
      config.profiles[flags.profile] = { server, token, user: user.name };
      config.current = flags.profile;
      const path = saveConfig(io.env, config);
      cacheNames(io, Object.keys(config.profiles));
      const shown = { profile: flags.profile, server, user: user.name, version: user.version, file: path };
      io.stdout(render(outputOf(flags), shown, () => [`logged in to ${server} as ${user.name} (profile ${flags.profile}, saved in ${path})`]));
    });

  program
    .command("logout")
    .description("forget a profile and its token (the current one unless --profile)")
    .option("--profile <name>", "the profile to forget (default: $BLOCKKIT_PROFILE, then the current one)", profileOption)
    .action((flags: { profile?: string }) => {
      const config = loadConfig(io.env, (line) => io.stderr(`${line}\n`));
      const name = flags.profile ?? (io.env.BLOCKKIT_PROFILE || config.current);
      if (name === undefined || !config.profiles[name]) throw new CliError(name === undefined ? "not logged in: no current profile" : `no profile "${name}"`);
      delete config.profiles[name];
      if (config.current === name) config.current = Object.keys(config.profiles).sort()[0];
      saveConfig(io.env, config);
      cacheNames(io, Object.keys(config.profiles));
      io.stdout(`logged out of profile ${name}${config.current === undefined ? "" : `; current profile: ${config.current}`}\n`);
    });

  const profiles = program
    .command("profiles")
    .description("list the saved profiles; the current one is marked *")
    .option("-o, --output <format>", "output format: table, json, yaml", outputOption)
    .option("--json", "the same as -o json")
    .action((flags: { output?: Output; json?: boolean }) => {
      const config = loadConfig(io.env, (line) => io.stderr(`${line}\n`));
      const names = Object.keys(config.profiles).sort();
      const data = names.map((name) => ({ name, current: name === config.current, server: config.profiles[name]?.server, user: config.profiles[name]?.user ?? null }));
      io.stdout(
        render(outputOf(flags), data, () =>
          names.length === 0
            ? ["(no profiles: blockkit login --server URL --token T)"]
            : table(
                ["CURRENT", "PROFILE", "SERVER", "USER"],
                data.map((p) => [p.current ? "*" : "", p.name, p.server ?? "", p.user ?? "-"]),
              ),
        ),
      );
    });
  profiles
    .command("use")
    .description("make a saved profile the current one")
    .argument("<name>", "the profile", profileOption)
    .action((name: string) => {
      const config = loadConfig(io.env, (line) => io.stderr(`${line}\n`));
      if (!config.profiles[name]) throw new CliError(`no profile "${name}" (blockkit profiles lists them)`);
      config.current = name;
      saveConfig(io.env, config);
      io.stdout(`current profile: ${name}\n`);
    });
}
