/** `blockkit subdevices add|update|rm|data GUID …`: RF codes, webhooks and SMS recipients under a device. */
import type { Command } from "commander";
import type { SubDeviceCategory, SubDeviceCreate, SubDeviceType } from "../../protocol/api-types.js";
import { url } from "../options.js";
import { guid, oneOf, subdeviceId } from "./args.js";
import { CliError, type CliIO, apiAction, apiOptions } from "./context.js";
import { historyOptions, historyParams, pointLines } from "./devices.js";

const CATEGORIES: readonly SubDeviceCategory[] = ["rf", "webhook", "sms"];
const TYPES: readonly SubDeviceType[] = ["actuator", "sensor"];

interface SubFlags {
  category?: SubDeviceCategory;
  type?: SubDeviceType;
  name?: string;
  data?: string;
  url?: string;
}

function subOptions(cmd: Command): Command {
  return cmd
    .option("--category <category>", `one of ${CATEGORIES.join(", ")}`, oneOf(CATEGORIES))
    .option("--type <type>", `one of ${TYPES.join(", ")}`, oneOf(TYPES))
    .option("--name <name>", "the sub-device's name")
    .option("--data <data>", "the code (rf) or phone number (sms)")
    .option("--url <url>", "the URL a webhook sub-device calls", url);
}

function body(flags: SubFlags): Partial<SubDeviceCreate> {
  if (flags.name !== undefined && flags.name.trim() === "") throw new CliError("--name is empty");
  const b: Partial<SubDeviceCreate> = {};
  if (flags.category !== undefined) b.category = flags.category;
  if (flags.type !== undefined) b.type = flags.type;
  if (flags.name !== undefined) b.shortName = flags.name;
  if (flags.data !== undefined) b.data = flags.data;
  if (flags.url !== undefined) b.url = flags.url;
  return b;
}

export function registerSubdevices(program: Command, io: CliIO): void {
  const subs = apiOptions(program.command("subdevices").description("add, change, remove a device's sub-devices, or read their history"));
  subOptions(subs.command("add").description("add a sub-device; prints its id (and a webhook's tickle token)").argument("<guid>", "device GUID", guid)).action(
    apiAction(io, async (ctx, id: string, flags: SubFlags) => {
      if (!flags.category || !flags.type || flags.name === undefined) throw new CliError("give --category, --type and --name");
      const created = await ctx.client.addSubdevice(id, body(flags) as SubDeviceCreate);
      ctx.print(created, () => [created.id, ...(created.token === undefined ? [] : [`token ${created.token}`])]);
    }),
  );
  subOptions(
    subs
      .command("update")
      .description("change a sub-device's fields")
      .argument("<guid>", "device GUID", guid)
      .argument("<id>", "sub-device id", subdeviceId),
  ).action(
    apiAction(io, async (ctx, id: string, sub: string, flags: SubFlags) => {
      const b = body(flags);
      if (Object.keys(b).length === 0) throw new CliError("give at least one of --category, --type, --name, --data, --url");
      const r = await ctx.client.updateSubdevice(id, sub, b);
      const line = `updated sub-device ${sub} of ${id}`;
      ctx.print(r.token === undefined ? null : r, () => (r.token === undefined ? [line] : [line, `token ${r.token}`]));
    }),
  );
  subs
    .command("rm")
    .description("remove a sub-device")
    .argument("<guid>", "device GUID", guid)
    .argument("<id>", "sub-device id", subdeviceId)
    .action(
      apiAction(io, async (ctx, id: string, sub: string) => {
        await ctx.client.removeSubdevice(id, sub);
        ctx.done(`removed sub-device ${sub} of ${id}`);
      }),
    );
  historyOptions(
    subs
      .command("data")
      .description("a sub-device's history (counts per --interval)")
      .argument("<guid>", "device GUID", guid)
      .argument("<id>", "sub-device id", subdeviceId),
    false,
  ).action(
    apiAction(io, async (ctx, id: string, sub: string, flags: { from?: number; to?: number; interval?: string }) => {
      const points = await ctx.client.subdeviceHistory(id, sub, historyParams(flags));
      ctx.print(points, () => pointLines(points));
    }),
  );
}
