/**
 * Store types of work that must survive the loss of the instance doing it: the callback outbox,
 * rule jobs and rule evaluations, each leased to one instance at a time. Apart from types.ts
 * because the three share one lease discipline and read best together; types.ts re-exports them.
 */

/** A callback delivery leased from the durable outbox, with what its POST needs. */
export interface OutboxDelivery {
  id: number;
  /** X-Blockkit-Delivery: the same on every attempt, on whichever instance. */
  delivery: string;
  device_id: number;
  user_id: number;
  attempts: number;
  guid: string;
  g: string;
  v: number;
  d: number;
  node_id: string;
  da: string;
  ts: number;
  url: string;
  secret: string;
}

/**
 * Callback deliveries kept in the store: written in the transaction of their event (a reading of a
 * device with a callback) and leased by one instance at a time, so that a delivery survives the
 * loss of the instance doing it (PostgreSQL) or of the process (SQLite, whose one process takes a
 * row of another lease over at once: sqlite/outbox.ts). Only the head of each device's queue can
 * be leased: one attempt per device at a time, in order. A deleted callback takes its deliveries.
 */
export interface CallbackOutbox {
  /**
   * Leases (to `lease`, until now + leaseMs) due heads of device queues whose lease is free or
   * expired, oldest first: at most `perUser` of one user, none of the users in `busy`, `limit` in
   * all. SQLite (one process) leases with each head the deliveries after it, a prefix of the
   * device's queue, which the caller sends in order; a failed one goes back with the rest released.
   */
  claim(lease: string, now: number, leaseMs: number, limit: number, perUser: number, busy: number[]): Promise<OutboxDelivery[]>;
  /** Delivered or given up: gone. */
  remove(ids: number[]): Promise<void>;
  /** Failed: due again at `nextAt`, lease released (any instance may retry it). */
  retry(id: number, lease: string, attempts: number, nextAt: number): Promise<void>;
  /** Drops the newest deliveries beyond the bounds (every row counts, leased ones are kept); the counts per reason. */
  trim(maxPerDevice: number, maxPerUser: number, maxTotal: number, now: number): Promise<{ device: number; user: number; total: number }>;
  /** Extends the leases of these deliveries still held by `lease` (waiting for a slot or in flight). */
  renew(lease: string, ids: number[], now: number, leaseMs: number): Promise<void>;
  /** Deliveries waiting (leased or not). */
  depth(): Promise<number>;
}

/** A rule run in progress, kept in the store under a lease. */
export interface RuleJobRow {
  id: number;
  rule_id: number;
  fired_at: number;
  cause: number[];
  /** The first action not finished yet. */
  step: number;
  /** What the finished actions did (the run's history record). */
  steps: unknown[];
  /** When a sleep at `step` ends (a run taken over sleeps the rest only). */
  sleep_until: number | null;
}

/**
 * Runs of rules that survive the loss of the instance running them: a firing inserts a job leased
 * to the instance that fired it; it records its progress after each action; an instance whose lease
 * lapsed (killed) leaves the job to another one, which resumes at the first unfinished action.
 */
export interface RuleJobsRepo {
  /**
   * The firing of rule `ruleId` at `now` as a job leased to `lease`: null when the rule fired less
   * than `timeoutMs` before (any instance) or is gone. Claims the timeout in the same statement.
   */
  fire(ruleId: number, now: number, timeoutMs: number, cause: readonly number[], lease: string, leaseMs: number): Promise<number | null>;
  /** Records progress; false when the job is no longer leased to `lease` (taken over: stop). */
  progress(id: number, lease: string, step: number, steps: unknown[], sleepUntil: number | null): Promise<boolean>;
  finish(id: number): Promise<void>;
  /** Extends the leases of these jobs still held by `lease` (runs in progress here). */
  renew(lease: string, ids: number[], now: number, leaseMs: number): Promise<void>;
  /**
   * Leases up to `limit` jobs whose lease expired, each the oldest job of its rule: the jobs of one
   * rule run one at a time, in firing order, across instances.
   */
  takeOver(lease: string, now: number, leaseMs: number, limit: number): Promise<RuleJobRow[]>;
}

/** A committed reading whose rules have not been evaluated yet (`rule_evals`). */
export interface RuleEvalRow {
  id: number;
  device_id: number;
  user_id: number;
  guid: string;
  ts: number;
  da: string;
  /** The device's value before this reading, as committed (null: none). */
  prev: string | null;
  cause: number[];
}

/** A firing decided by an evaluation: its job is inserted with the evaluation's removal. */
export interface RuleFiring {
  ruleId: number;
  firedAt: number;
  timeoutMs: number;
  cause: readonly number[];
}

/**
 * What became of a firing: the id of its job, to run here; `behind` another instance's job of the
 * rule (the job waits in the store for its turn); `refused` by the rule's timeout (any instance).
 */
export type FiringOutcome = number | "behind" | "refused";

/**
 * Rule evaluation once per event across instances, surviving the loss of the instance doing it.
 * The ingest transaction writes one row per watched reading (EventsRepo.commit with an
 * EvaluationLease), leased to the committing instance, which evaluates it at once; rows whose lease
 * lapsed (their instance died) are claimed by another one. A device's rows are evaluated in commit
 * order: a row is consumed only with (or after) every earlier row of its device.
 */
export interface RuleEvalsRepo {
  /**
   * Leases up to `limit` rows whose lease lapsed, oldest first; of each device only rows with no
   * earlier row still leased elsewhere.
   */
  claim(lease: string, now: number, leaseMs: number, limit: number): Promise<RuleEvalRow[]>;
  /**
   * The evaluation of rows `ids` is done: in one transaction, each firing becomes a job leased to
   * `lease` (claiming its rule's timeout, as RuleJobsRepo.fire) and the rows are deleted. Null, and
   * nothing done, when a row is no longer leased to `lease` or an earlier row of its device is
   * still waiting: the rows are released (their lease lapses at once) to be claimed in order. A job
   * `behind` an older job of its rule that another lease holds is released too, for the instance
   * that takes it over when it is the oldest (RuleJobsRepo.takeOver); it is not run here.
   */
  consume(lease: string, ids: number[], firings: RuleFiring[], leaseMs: number): Promise<FiringOutcome[] | null>;
  /** Lets any instance claim these rows now (a clean stop). */
  release(lease: string, ids: number[]): Promise<void>;
  /** Rows waiting (leased or not). */
  depth(): Promise<number>;
}
