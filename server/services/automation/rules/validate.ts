/**
 * Checks a rule body: every handler known and in the right list, its params present and well
 * typed, every GUID one of the user's devices. Errors are 400s naming the place, e.g.
 * `actions[1] (sendEmail): params.to is required`. Handler names are stored under the spec's names.
 */
import type { RuleBody, RuleHandler } from "../../../../protocol/automation.js";
import { numericValue } from "../../../../protocol/history.js";
import { badRequest } from "../../../errors.js";
import type { DeviceRow } from "../../../store/types.js";
import { handler } from "./handlers/index.js";
import type { Params, ValidationContext } from "./handlers/types.js";

export interface ValidRule {
  shortName: string;
  preconditions: RuleHandler[];
  actions: RuleHandler[];
  timeout: number;
}

/** Looks a GUID up among the user's devices; null when it is not one of them. */
export type DeviceLookup = (guid: string) => Promise<DeviceRow | null>;

function context(where: string, params: Params, lookup: DeviceLookup): ValidationContext {
  const missing = (field: string) => badRequest(`${where}: params.${field} is required`);
  return {
    where,
    async device(field) {
      const guid = params[field];
      if (guid === undefined || guid === null || guid === "") throw missing(field);
      if (typeof guid !== "string") throw badRequest(`${where}: params.${field} must be a device GUID string`);
      const row = await lookup(guid);
      if (!row) throw badRequest(`${where}: params.${field} names device ${guid}, which is not one of your devices`);
      return row;
    },
    text(field, opts = {}) {
      const v = params[field];
      if (v === undefined || v === null) {
        if (opts.optional) return undefined;
        throw missing(field);
      }
      if (typeof v !== "string" && typeof v !== "number") throw badRequest(`${where}: params.${field} must be a string`);
      const s = String(v);
      if (opts.max !== undefined && s.length > opts.max) throw badRequest(`${where}: params.${field} is longer than ${opts.max} characters`);
      return s;
    },
    number(field, opts = {}) {
      const v = params[field];
      if (v === undefined || v === null || v === "") throw missing(field);
      const n = typeof v === "number" || typeof v === "string" ? numericValue(v) : null;
      if (n === null) throw badRequest(`${where}: params.${field} must be a number`);
      if (opts.min !== undefined && n < opts.min) throw badRequest(`${where}: params.${field} must be at least ${opts.min}`);
      if (opts.max !== undefined && n > opts.max) throw badRequest(`${where}: params.${field} must be at most ${opts.max}`);
      return n;
    },
  };
}

async function check(list: "preconditions" | "actions", items: RuleBody["actions"], lookup: DeviceLookup): Promise<RuleHandler[]> {
  const out: RuleHandler[] = [];
  const kind = list === "preconditions" ? "precondition" : "action";
  for (const [i, item] of items.entries()) {
    const h = handler(item.handler);
    const where = `${list}[${i}] (${item.handler})`;
    if (!h) throw badRequest(`${list}[${i}]: unknown handler "${item.handler}"`);
    if (h.kind !== kind) throw badRequest(`${where}: ${h.name} is an ${h.kind}, not allowed in ${list}`);
    const params = (item.params ?? {}) as Params;
    out.push({ handler: h.name, params: await h.validate(params, context(where, params, lookup)) });
  }
  return out;
}

export async function validateRule(body: RuleBody, lookup: DeviceLookup): Promise<ValidRule> {
  return {
    shortName: body.shortName,
    preconditions: await check("preconditions", body.preconditions, lookup),
    actions: await check("actions", body.actions, lookup),
    // A number or a decimal string (automation.ts WIRE_NUMBER).
    timeout: Number(body.timeout ?? 0),
  };
}
