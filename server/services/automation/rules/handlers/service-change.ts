/** `serviceChange {guid, to}`: true on each event whose DA equals `to`; holds while the value is `to`. */
import type { PreconditionHandler } from "./types.js";

export const serviceChange: PreconditionHandler = {
  kind: "precondition",
  name: "serviceChange",
  aliases: ["ninjaChange"],
  async validate(params, ctx) {
    const device = await ctx.device("guid");
    return { ...params, guid: device.guid, to: ctx.text("to", { max: 4096 }) };
  },
  guid: (params) => params.guid as string,
  triggers: (params, _prev, cur) => cur === params.to,
  holds: (params, cur) => cur === params.to,
};
