/**
 * `serviceRangeToggle {guid, between, and}`: becomes true when the value enters [between, and]
 * from outside (or from no value); holds while the value is inside.
 */
import { numericValue } from "../../../../../protocol/history.js";
import { badRequest } from "../../../../errors.js";
import type { Params, PreconditionHandler } from "./types.js";

function inside(params: Params, value: string | undefined): boolean {
  if (value === undefined) return false;
  const n = numericValue(value);
  return n !== null && n >= (params.between as number) && n <= (params.and as number);
}

export const serviceRangeToggle: PreconditionHandler = {
  kind: "precondition",
  name: "serviceRangeToggle",
  aliases: ["ninjaRangeToggle"],
  async validate(params, ctx) {
    const device = await ctx.device("guid");
    const between = ctx.number("between");
    const and = ctx.number("and");
    if (between > and) throw badRequest(`${ctx.where}: params.between (${between}) must not be above params.and (${and})`);
    return { ...params, guid: device.guid, between, and };
  },
  guid: (params) => params.guid as string,
  triggers: (params, prev, cur) => inside(params, cur) && !inside(params, prev),
  holds: (params, cur) => inside(params, cur),
};
