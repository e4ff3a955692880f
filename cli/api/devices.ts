/** `blockkit devices` (list) and `blockkit device show|set|rm|heartbeat|data GUID`. */
import type { Command } from "commander";
import type { DataPoint, DeviceJson, HistoryParams } from "../../protocol/api-types.js";
import { writeCache } from "../config.js";
import { foldFn, guid, interval, moment } from "./args.js";
import { chart } from "./chart.js";
import { type ApiContext, CliError, type CliIO, apiAction, apiOptions, shortWhen, table, when } from "./context.js";

function lastData(d: DeviceJson, format: (ms: number | null | undefined) => string = when): { value: string; time: string } {
  const last = d.last_data as { DA?: string | number | null; timestamp?: number | null };
  return { value: last.DA === undefined || last.DA === null ? "-" : String(last.DA), time: format(last.timestamp) };
}

export function deviceLines(id: string, d: DeviceJson): string[] {
  const last = lastData(d);
  const subs = Object.entries(d.subDevices ?? {});
  return [
    `guid        ${id}`,
    `name        ${d.shortName || d.default_name}`,
    `type        ${d.device_type} (${[d.is_sensor ? "sensor" : "", d.is_actuator ? "actuator" : ""].filter(Boolean).join(", ") || "-"})`,
    `block       ${d.node}`,
    `last value  ${last.value} at ${last.time}`,
    ...subs.map(([sid, s]) => `subdevice   ${sid}  ${s.category} ${s.type}  ${s.shortName}${s.data === undefined ? "" : `  data=${s.data}`}`),
  ];
}

/**
 * A value as the table shows it: a fold's float noise (a mean of 21.228571428571428) to six
 * significant digits, never fewer than its whole part needs; whole numbers and text as they are.
 * `--json` / `-o yaml` print the value as the server sent it.
 */
export function pointValue(v: DataPoint["v"]): string {
  if (typeof v !== "number" || !Number.isFinite(v) || Number.isInteger(v)) return String(v);
  const whole = Math.floor(Math.log10(Math.abs(v))) + 1;
  return String(Number(v.toPrecision(Math.min(17, Math.max(6, whole + 1)))));
}

export function pointLines(points: DataPoint[]): string[] {
  return points.length === 0 ? ["(no data)"] : table(["TIME", "VALUE"], points.map((p) => [p.t, pointValue(p.v)]));
}

interface HistoryFlags {
  from?: number;
  to?: number;
  interval?: string;
  fn?: HistoryParams["fn"];
  chart?: boolean;
}

/** Adds --from/--to/--interval (and --fn when asked) to a history command. */
export function historyOptions(cmd: Command, withFn: boolean): Command {
  cmd
    .option("--from <time>", "start: -30m, -24h, -7d (before now), epoch ms or ISO 8601 (default: 24 h before --to)", (v) => moment(v))
    .option("--to <time>", "end: now, -1h, epoch ms or ISO 8601 (default: now)", (v) => moment(v))
    .option("--interval <interval>", "bucket width, e.g. 1hour, 15min, 1day", interval);
  if (withFn) cmd.option("--fn <fn>", "folding function of each bucket: mean, sum, min, max, stddev, ss, count", foldFn);
  return cmd;
}

export function historyParams(flags: HistoryFlags): HistoryParams {
  if (flags.from !== undefined && flags.to !== undefined && flags.from > flags.to) {
    throw new CliError("--from is after --to");
  }
  return { from: flags.from, to: flags.to, interval: flags.interval, fn: flags.fn };
}

/** The points as a table, and with --chart a chart under it (tables only: -o json|yaml stay data). */
export function printPoints(ctx: ApiContext, points: DataPoint[], withChart: boolean): void {
  ctx.print(points, () => [...pointLines(points), ...(withChart && points.length > 0 ? ["", ...chart(points)] : [])]);
}

export function registerDevices(program: Command, io: CliIO): void {
  apiOptions(program.command("devices").description("list your devices: GUID, type, name, last value and its time")).action(
    apiAction(io, async (ctx: ApiContext) => {
      const devices = await ctx.client.devices();
      writeCache(io.env, "guids", Object.keys(devices).sort());
      ctx.print(devices, () => {
        const rows = Object.entries(devices)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([id, d]) => {
            const last = lastData(d, shortWhen);
            return [id, d.device_type, d.shortName || d.default_name, last.value, last.time];
          });
        return rows.length === 0 ? ["(no devices)"] : table(["GUID", "TYPE", "NAME", "LAST", "TIME"], rows);
      });
    }),
  );

  const device = apiOptions(program.command("device").description("show, command, rename or remove one device"));
  device
    .command("show")
    .description("a device's fields, last value and sub-devices")
    .argument("<guid>", "device GUID", guid)
    .action(
      apiAction(io, async (ctx, id: string) => {
        const d = await ctx.client.device(id);
        ctx.print(d, () => deviceLines(id, d));
      }),
    );
  device
    .command("set")
    .description("send a command (--da) and/or rename (--name) a device")
    .argument("<guid>", "device GUID", guid)
    .option("--da <value>", "the command value (DA) to send to the device")
    .option("--name <name>", "the device's new name")
    .action(
      apiAction(io, async (ctx, id: string, flags: { da?: string; name?: string }) => {
        if (flags.da === undefined && flags.name === undefined) throw new CliError("give --da VALUE and/or --name NAME");
        if (flags.name !== undefined && flags.name.trim() === "") throw new CliError("--name is empty");
        await ctx.client.updateDevice(id, { DA: flags.da, shortName: flags.name });
        ctx.done([flags.da === undefined ? "" : `sent ${flags.da} to ${id}`, flags.name === undefined ? "" : `renamed ${id} to ${flags.name}`].filter(Boolean).join("; "));
      }),
    );
  device
    .command("rm")
    .description("remove a device and its history")
    .argument("<guid>", "device GUID", guid)
    .action(
      apiAction(io, async (ctx, id: string) => {
        await ctx.client.deleteDevice(id);
        ctx.done(`removed ${id}`);
      }),
    );
  device
    .command("heartbeat")
    .description("the device's last heartbeat")
    .argument("<guid>", "device GUID", guid)
    .action(
      apiAction(io, async (ctx, id: string) => {
        const hb = await ctx.client.heartbeat(id);
        ctx.print(hb, () => [`${hb.GUID}  ${String(hb.DA)}  ${when(hb.timestamp)}`]);
      }),
    );
  historyOptions(
    device.command("data").description("the device's history, raw or folded per --interval").argument("<guid>", "device GUID", guid),
    true,
  )
    .option("--chart", "draw a chart of the values under the table")
    .action(
      apiAction(io, async (ctx, id: string, flags: HistoryFlags) => {
        const points = await ctx.client.history(id, historyParams(flags));
        printPoints(ctx, points, flags.chart === true);
      }),
    );
}
