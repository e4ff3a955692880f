/** `serviceSendCommand {guid, da}`: sends DA to a device of the user, as PUT /device/:guid would. */
import { deviceType } from "../../../../../protocol/device-types.js";
import { badRequest } from "../../../../errors.js";
import type { ActionHandler } from "./types.js";

export const serviceSendCommand: ActionHandler = {
  kind: "action",
  name: "serviceSendCommand",
  aliases: ["ninjaSendCommand"],
  async validate(params, ctx) {
    const device = await ctx.device("guid");
    const t = deviceType(device.v, device.d);
    if (!t.is_actuator && t.device_type !== "unknown") {
      throw badRequest(`${ctx.where}: device ${device.guid} (${t.device_type}) is not an actuator`);
    }
    return { ...params, guid: device.guid, da: ctx.text("da", { max: 4096 }) };
  },
  async run(params, ctx) {
    await ctx.deps.sendCommand(ctx.userId, params.guid as string, params.da as string);
    return `sent ${JSON.stringify(params.da)} to ${params.guid as string}`;
  },
};
