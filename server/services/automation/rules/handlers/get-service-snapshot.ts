/** `getServiceSnapshot {guid}`: takes a camera snapshot and keeps it for later actions of the run. */
import { D } from "../../../../../protocol/device-types.js";
import { badRequest } from "../../../../errors.js";
import type { ActionHandler } from "./types.js";

export const getServiceSnapshot: ActionHandler = {
  kind: "action",
  name: "getServiceSnapshot",
  aliases: ["getNinjaSnapshot"],
  async validate(params, ctx) {
    const device = await ctx.device("guid");
    if (device.v !== 0 || device.d !== D.camera) throw badRequest(`${ctx.where}: device ${device.guid} is not a camera (D ${D.camera})`);
    return { ...params, guid: device.guid };
  },
  async run(params, ctx) {
    const snap = await ctx.deps.snapshot(ctx.userId, params.guid as string, ctx.signal);
    ctx.carry.snapshot = snap;
    return `took a snapshot of ${snap.body.length} bytes from ${snap.guid}`;
  },
};
