/** `sendToFileHost {guid}`: stores the run's snapshot at the File Host device's target. */
import { D } from "../../../../../protocol/device-types.js";
import { badRequest } from "../../../../errors.js";
import type { ActionHandler } from "./types.js";

export const sendToFileHost: ActionHandler = {
  kind: "action",
  name: "sendToFileHost",
  aliases: ["sendToDropbox"],
  async validate(params, ctx) {
    const device = await ctx.device("guid");
    if (device.v !== 0 || device.d !== D.filehost) {
      throw badRequest(`${ctx.where}: device ${device.guid} is not a File Host device (D ${D.filehost})`);
    }
    return { ...params, guid: device.guid };
  },
  async run(params, ctx) {
    const snap = ctx.carry.snapshot;
    if (!snap) throw badRequest("no snapshot in this run: put getServiceSnapshot before sendToFileHost");
    const host = await ctx.deps.device(ctx.userId, params.guid as string);
    const name = `${snap.guid}-${new Date(snap.at).toISOString().replace(/[:.]/g, "-")}.jpg`;
    return ctx.deps.storeFile(host, name, snap, ctx.signal);
  },
};
