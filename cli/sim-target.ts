/** Options shared by `blockkit sim` and `blockkit sim replay`: the server and the user token. */
import type { Command } from "commander";
import { url } from "./options.js";

/** `--server` may be the root (`http://h:8000`) or the REST root (`…/rest/v0`). */
export function restRoot(server: string): string {
  const s = server.replace(/\/+$/, "");
  return /\/rest\/v\d+$/.test(s) ? s : `${s}/rest/v0`;
}

export function addTargetOptions(cmd: Command): Command {
  return cmd
    .option("--server <url>", "server root or REST root (http://HOST:PORT[/rest/v0]); required", url)
    .option("--stream <url>", "stream root for camera snapshots (default: server port + 1)", url)
    .option("--token <token>", "user access token (default: $BLOCKKIT_TOKEN)");
}

/** The server and token of the flags; exits with 2 when one is missing. */
export function target(flags: { server?: string; token?: string }): { server: string; token: string } {
  const token = flags.token ?? process.env.BLOCKKIT_TOKEN;
  if (!flags.server) {
    process.stderr.write("blockkit sim: give --server URL (the server's root or REST root)\n");
    process.exit(2);
  }
  if (!token) {
    process.stderr.write("blockkit sim: give --token or set BLOCKKIT_TOKEN (a user access token)\n");
    process.exit(2);
  }
  return { server: flags.server, token };
}
