/**
 * What caused an event, as the chain of rules whose actions led to it: a rule's run carries the
 * chain (AsyncLocalStorage), a webhook actuator call sends it in CAUSE_HEADER, a tickle that
 * carries the header stamps it on the data event it emits. The engine refuses to fire a rule on an
 * event its own action chain caused (rule -> webhook -> its own tickle URL looped at ~450 events/s)
 * and any event whose chain is MAX_CAUSE_CHAIN long, and records that in the rule's history.
 */
import { AsyncLocalStorage } from "node:async_hooks";

/** Header of outgoing webhook actuator calls and incoming tickles: rule ids, comma-separated. */
export const CAUSE_HEADER = "x-blockkit-cause";

/** Longest chain of rules one event may come from: rule A -> webhook -> rule B -> webhook -> … */
export const MAX_CAUSE_CHAIN = 8;

const chain = new AsyncLocalStorage<readonly number[]>();

/** Runs `f` as (part of) the run of a rule whose firing event came from `cause`. */
export function runCaused<T>(cause: readonly number[], f: () => Promise<T>): Promise<T> {
  return chain.run(cause, f);
}

/** The chain of the rule run in progress, or undefined outside any run. */
export function currentCause(): readonly number[] | undefined {
  return chain.getStore();
}

export function formatCause(cause: readonly number[]): string {
  return cause.join(",");
}

/** A header value as a chain (at most MAX_CAUSE_CHAIN ids; anything malformed is no chain). */
export function parseCause(header: unknown): number[] | undefined {
  if (typeof header !== "string" || !/^[0-9]{1,15}(,[0-9]{1,15}){0,15}$/.test(header)) return undefined;
  return header.split(",").map(Number).slice(0, MAX_CAUSE_CHAIN);
}
