/** `blockkit status`: is the server reachable, its version, whose token this is, and how much is there. */
import type { Command } from "commander";
import { ApiError } from "../../protocol/api-client.js";
import { type CliIO, apiAction, apiOptions } from "./context.js";

export interface StatusJson {
  server: string;
  profile: string | null;
  reachable: boolean;
  version: string | null;
  user: string | null;
  credential: string | null;
  blocks: number | null;
  devices: number | null;
  rules: number | null;
  error: string | null;
}

export function registerStatus(program: Command, io: CliIO): void {
  apiOptions(program.command("status").description("the server (reachable, version), who the token belongs to, and counts of blocks, devices and rules")).action(
    apiAction(io, async (ctx) => {
      const s: StatusJson = {
        server: ctx.target.server,
        profile: ctx.target.profile,
        reachable: false,
        version: null,
        user: null,
        credential: null,
        blocks: null,
        devices: null,
        rules: null,
        error: null,
      };
      let failed: unknown = null;
      try {
        const user = await ctx.client.user();
        Object.assign(s, { reachable: true, version: user.version, user: user.name, credential: user.credential });
        const [blocks, devices, rules] = await Promise.all([ctx.client.blocks(), ctx.client.devices(), ctx.client.rules()]);
        Object.assign(s, { blocks: Object.keys(blocks).length, devices: Object.keys(devices).length, rules: rules.length });
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        failed = err;
        s.reachable = err.status !== 0;
        s.error = err.status === 0 ? "unreachable" : `${err.status} ${err.serviceError ?? "failed"}`;
      }
      const count = (n: number | null): string => (n === null ? "-" : String(n));
      ctx.print(s, () => [
        `server    ${s.server}${s.profile === null ? "" : ` (profile ${s.profile})`}`,
        `reachable ${s.reachable ? "yes" : "no"}${s.version === null ? "" : `, blockkit ${s.version}`}`,
        `user      ${s.user === null ? "-" : `${s.user} (${s.credential === "oauth" ? "OAuth token" : "personal token"})`}`,
        `blocks    ${count(s.blocks)}`,
        `devices   ${count(s.devices)}`,
        `rules     ${count(s.rules)}`,
        ...(s.error === null ? [] : [`error     ${s.error}`]),
      ]);
      // The report is printed either way; a failure still ends with exit code 1.
      if (failed) throw failed;
    }),
  );
}
