/** The rule engine's options and the shapes its parts share (engine.ts, rule-index.ts, run-actions.ts, run-history.ts). */
import type { RuleJobRow } from "../../../store/types.js";
import type { FiringRateOptions, FiringRate } from "./firing-rate.js";
import type { ActionHandler, Params, PreconditionHandler } from "./handlers/types.js";

export interface RuleEngineOptions {
  /** Runs kept per rule. Default 20. */
  historyKeep?: number;
  /** Firings waiting behind a running one, per rule; more are dropped. Default 16. */
  maxPending?: number;
  /** Rules one user may have. Default 10 000. */
  maxRulesPerUser?: number;
  /**
   * Runs started per turn of the event loop; the others wait for the next turn, so that 10,000
   * rules fired by one event do not hold the loop (other users' requests) for their whole work.
   * Default 64.
   */
  runsPerTurn?: number;
  /**
   * Several instances share the store: a rule's other devices are read as committed when one of
   * its preconditions triggers (another instance may have taken their events).
   */
  shared?: boolean;
  /**
   * How long this process's lease on a run or an evaluation lasts unrenewed, ms (how soon another
   * instance resumes the work of one that died; on the embedded store a restart takes it at once).
   * Default 10 000.
   */
  leaseMs?: number | undefined;
  /** The firing-rate backstop (firing-rate.ts): more than 20 firings a second for 5 seconds suspends a rule. */
  firingRate?: FiringRateOptions;
  /**
   * Test only (BLOCKKIT_TEST_HOLD_RULE_EVALUATION=1): this instance
   * evaluates nothing, neither its own commits nor others' lapsed ones, so that a test can kill it
   * between the commit of an event and its evaluation.
   */
  testHoldEvaluation?: boolean;
}

/** A rule that an evaluated reading triggers, its other preconditions holding. */
export interface Candidate {
  rule: Compiled;
  cause: readonly number[];
  guid: string;
  /** The rule's lastFired before this firing was admitted (given back if nothing was fired). */
  before?: number | null;
}

/** Hears of each run once its history row is written (the live stream's rule frames). */
export type RunListener = (userId: number, rid: number, ok: boolean, firedAt: number) => void;

/** A run resumed from its job: where it stopped, and its lease. */
export type JobState = Pick<RuleJobRow, "id" | "step" | "steps" | "sleep_until">;

export interface Compiled {
  id: number;
  userId: number;
  timeoutMs: number;
  suspended: boolean;
  removed: boolean;
  pre: { h: PreconditionHandler; params: Params; guid: string }[];
  actions: { h: ActionHandler; params: Params }[];
  /** Shared by the versions of one rule, so an update keeps its timeout and its queue. */
  state: { lastFired: number | null; pending: number; chain: Promise<void>; rate: FiringRate };
}
