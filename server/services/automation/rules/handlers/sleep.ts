/** `sleep {guid: "N/A", sleepLength}`: waits sleepLength milliseconds before the next action. */
import { unavailable } from "../../../../errors.js";
import type { ActionHandler } from "./types.js";

/** Longest sleep of one action, ms (one hour). */
export const MAX_SLEEP_MS = 3_600_000;

export const sleep: ActionHandler = {
  kind: "action",
  name: "sleep",
  aliases: [],
  async validate(params, ctx) {
    return { ...params, sleepLength: ctx.number("sleepLength", { min: 0, max: MAX_SLEEP_MS }) };
  },
  run(params, ctx) {
    const ms = params.sleepLength as number;
    return new Promise((resolve, reject) => {
      if (ctx.signal.aborted) return reject(unavailable("the rule engine stopped"));
      const timer = setTimeout(() => {
        ctx.signal.removeEventListener("abort", onAbort);
        resolve(`slept ${ms} ms`);
      }, ms);
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(unavailable("the rule engine stopped"));
      };
      ctx.signal.addEventListener("abort", onAbort, { once: true });
    });
  },
};
