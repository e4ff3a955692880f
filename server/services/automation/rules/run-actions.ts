/**
 * One run of a rule's actions, in order; a failing one stops the run. A run with a job (durable,
 * PostgreSQL) records its progress after each action and, before a sleep, when the sleep ends, and
 * starts at the job's first unfinished action (from the last getServiceSnapshot when a later action
 * sends that snapshot, which was not kept).
 */
import type { RuleRunJson } from "../../../../protocol/automation.js";
import type { Compiled, JobState } from "./engine-types.js";
import type { ActionDeps, RunContext } from "./handlers/types.js";
import type { RuleJobs } from "./jobs.js";

/** Actions that use the snapshot an earlier getServiceSnapshot left in the run's carry. */
const USES_SNAPSHOT = new Set(["sendToFileHost", "sendEmail"]);

export interface RunEnv {
  deps: ActionDeps;
  signal: AbortSignal;
  clock: () => number;
  jobs: RuleJobs | null;
}

/** What the run did; `handed` when it stopped with its job left to the store (lost, or this engine stopping). */
export type RunOutcome = { steps: RuleRunJson["steps"]; error: string | null } | "handed";

export async function runActions(rule: Compiled, env: RunEnv, job?: JobState): Promise<RunOutcome> {
  const ctx: RunContext = { userId: rule.userId, deps: env.deps, carry: {}, signal: env.signal };
  let from = job?.step ?? 0;
  if (from > 0 && rule.actions.slice(from).some((a) => USES_SNAPSHOT.has(a.h.name))) {
    // The snapshot of an earlier step was not kept: take it again.
    const at = rule.actions.slice(0, from).findLastIndex((a) => a.h.name === "getServiceSnapshot");
    if (at >= 0) from = at;
  }
  const steps = ((job?.steps ?? []) as RuleRunJson["steps"]).slice(0, from);
  let error: string | null = null;
  for (let i = from; i < rule.actions.length; i++) {
    const a = rule.actions[i] as Compiled["actions"][number];
    if (rule.removed || env.signal.aborted) {
      // A job stopped by this engine's stop stays in the store for another instance.
      if (job && !rule.removed) return "handed";
      error = rule.removed ? "the rule was deleted during the run" : "the rule engine stopped";
      break;
    }
    const t0 = env.clock();
    let params = a.params;
    if (job && a.h.name === "sleep") {
      // Its end is recorded first: a run taken over sleeps only what is left.
      const until = i === job.step && job.sleep_until !== null ? job.sleep_until : t0 + (params.sleepLength as number);
      if (!(await env.jobs?.progress(job.id, i, steps, until))) return "handed";
      params = { ...params, sleepLength: Math.max(0, until - t0) };
    }
    try {
      const result = await a.h.run(params, ctx);
      steps.push({ handler: a.h.name, ok: true, result, ms: env.clock() - t0 });
      // Progress, so that a run taken over does not repeat this action (the last one: finished by the caller).
      if (job && i + 1 < rule.actions.length && !(await env.jobs?.progress(job.id, i + 1, steps, null))) return "handed";
    } catch (err) {
      if (job && env.signal.aborted && !rule.removed) return "handed";
      error = `${a.h.name}: ${(err as Error).message}`;
      steps.push({ handler: a.h.name, ok: false, error: (err as Error).message, ms: env.clock() - t0 });
      break;
    }
  }
  return { steps, error };
}
