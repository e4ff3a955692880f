/** `blockkit callbacks show|set|rm GUID [URL]`: the URL a device's readings are POSTed to. */
import type { Command } from "commander";
import { url } from "../options.js";
import { guid } from "./args.js";
import { CliError, type CliIO, apiAction, apiOptions } from "./context.js";

export function registerCallbacks(program: Command, io: CliIO): void {
  const callbacks = apiOptions(program.command("callbacks").description("show, set or remove a device's callback URL"));
  callbacks
    .command("show")
    .description("the device's callback URL and the secret its deliveries are signed with")
    .argument("<guid>", "device GUID", guid)
    .action(
      apiAction(io, async (ctx, id: string) => {
        const cb = await ctx.client.callback(id);
        ctx.print(cb, () => [`url     ${cb.url}`, ...(cb.secret === undefined ? [] : [`secret  ${cb.secret}`])]);
      }),
    );
  callbacks
    .command("set")
    .description("set (or replace) the device's callback URL; prints the secret its deliveries are signed with")
    .argument("<guid>", "device GUID", guid)
    .argument("<url>", "http or https URL", url)
    .action(
      apiAction(io, async (ctx, id: string, target: string) => {
        if (!/^https?:$/.test(new URL(target).protocol)) throw new CliError(`"${target}" is not an http or https URL`);
        await ctx.client.setCallback(id, target);
        // The secret is the one to check the x-blockkit-signature header with: show it where it was set.
        const cb = await ctx.client.callback(id);
        ctx.print(cb, () => [`callback of ${id} set to ${cb.url}`, ...(cb.secret === undefined ? [] : [`secret  ${cb.secret}`])]);
      }),
    );
  callbacks
    .command("rm")
    .description("remove the device's callback")
    .argument("<guid>", "device GUID", guid)
    .action(
      apiAction(io, async (ctx, id: string) => {
        await ctx.client.removeCallback(id);
        ctx.done(`callback of ${id} removed`);
      }),
    );
}
