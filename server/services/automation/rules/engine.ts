/**
 * The rule engine (DESIGN.md "Rules"). Rules are indexed by the GUIDs their preconditions watch
 * (rule-index.ts), so a committed event costs one map lookup, not a scan of all rules. A rule fires
 * on an event that makes one of its preconditions true while all the others hold, at most once per
 * `timeout` seconds; suspended rules are not in the index. The runs of one rule are serial (queued,
 * bounded); its actions run in order and a failing one stops the run. Each run is recorded (short
 * history). Evaluations and runs are rows of the store (rule_evals, rule_jobs) on both stores, so a
 * firing and a run in progress outlive the process (evaluations.ts, jobs.ts).
 */
import { randomUUID } from "node:crypto";
import { setMaxListeners } from "node:events";
import type { Logger } from "pino";
import type { Bus } from "../../../bus/types.js";
import type { FiringOutcome, IngestEvent, RuleFiring, RuleJobRow, RuleRow, RuleRunRow, Store } from "../../../store/types.js";
import type { CommittedEvent } from "../../ingest.js";
import { MAX_CAUSE_CHAIN, runCaused } from "./cause.js";
import type { Candidate, Compiled, JobState, RuleEngineOptions, RunListener } from "./engine-types.js";
import { type EvalInput, RuleEvaluations } from "./evaluations.js";
import type { ActionDeps } from "./handlers/types.js";
import { RuleJobs } from "./jobs.js";
import { runActions } from "./run-actions.js";
import { RuleIndex } from "./rule-index.js";
import { RunHistory } from "./run-history.js";
import { Turns } from "./turns.js";

export type { RuleEngineOptions, RunListener } from "./engine-types.js";

/** Bus channel announcing a changed rule id, so that every process's index follows CRUD. */
export const RULES_CHANNEL = "rules:changed";

export class RuleEngine {
  /** The rules by id and by the GUIDs they watch, and the evaluation of readings against them. */
  private readonly index: RuleIndex;
  private readonly abort = new AbortController();
  private readonly maxPending: number;
  /** Durable, leased runs (rule_jobs). */
  private readonly jobs: RuleJobs;
  /** Durable evaluation (rule_evals): the readings of watched devices, written with their commit. */
  private readonly evaluations: RuleEvaluations<Candidate>;
  private readonly history: RunHistory;
  private readonly turns: Turns;
  private unsubscribe: () => void = () => {};
  private unsubscribeResync: (() => void) | undefined;
  private readonly tag = randomUUID();
  readonly stats = { fired: 0, runs: 0, failed: 0, dropped: 0, loops: 0, suspended: 0, resumed: 0 };

  constructor(
    private readonly store: Store,
    private readonly bus: Bus,
    private readonly deps: ActionDeps,
    private readonly log: Logger,
    options: RuleEngineOptions = {},
    private readonly clock: () => number = Date.now,
  ) {
    // Every run in flight (sleeps, snapshot waits) listens to the one stop signal.
    setMaxListeners(0, this.abort.signal);
    this.history = new RunHistory(store, options.historyKeep ?? 20, log);
    this.maxPending = options.maxPending ?? 16;
    this.turns = new Turns(options.runsPerTurn ?? 64);
    this.index = new RuleIndex(store, options.shared ?? false, { maxFiringsPerSecond: 20, hotSeconds: 5, ...options.firingRate });
    // Durable runs and evaluations on both stores (one code path): the one process of the embedded
    // store owns all their rows, several instances on PostgreSQL lease them.
    const leaseMs = options.leaseMs ?? 10_000;
    this.jobs = new RuleJobs(store.ruleJobs, leaseMs, (job) => this.resume(job), log, clock);
    this.evaluations = new RuleEvaluations<Candidate>(
      store.ruleEvals,
      this.jobs.lease,
      leaseMs,
      { evaluate: (rows) => this.index.evaluateRows(rows), admit: (c, now) => this.admitCandidate(c, now), fired: (a, o) => this.firedDurably(a, o) },
      log,
      clock,
      options.testHoldEvaluation ?? false,
    );
  }

  /** Readings whose evaluation was claimed here after the instance that committed them lost its lease. */
  get evaluationsTakenOver(): number {
    return this.evaluations.stats.claimed;
  }

  /**
   * For the Ingest service: whether an event's reading is evaluated durably (a rule of its owner
   * watches its device).
   */
  get evaluation(): { lease: string; leaseMs: number; watches: (e: IngestEvent) => boolean } {
    return {
      lease: this.jobs.lease,
      leaseMs: this.jobs.leaseMs,
      watches: (e) => this.index.watches(e),
    };
  }

  async start(): Promise<void> {
    this.unsubscribe = this.bus.subscribe(RULES_CHANNEL, (message) => {
      const [tag, rid] = message.split(" ");
      if (tag === this.tag) return;
      this.index.reload(Number(rid)).catch((err: unknown) => this.log.error({ err, rid }, "reloading a changed rule failed"));
    });
    // A networked Bus that reconnected may have missed rule changes: read them all again.
    this.unsubscribeResync = this.bus.onResync?.(() => {
      this.index.reloadAll().catch((err: unknown) => this.log.error({ err }, "reloading the rules failed"));
    });
    await this.index.reloadAll();
    this.jobs.start();
    this.evaluations.start();
  }

  onRun(listener: RunListener): void {
    this.history.onRun(listener);
  }

  /** Tells the engines of other processes that a rule changed (this one was synced already). */
  announce(rid: number): void {
    this.bus.publish(RULES_CHANNEL, `${this.tag} ${rid}`);
  }

  /** Aborts running actions (sleeps, snapshot waits) and waits until their runs are recorded. */
  async stop(): Promise<void> {
    this.unsubscribe();
    this.unsubscribeResync?.();
    await this.evaluations.stop();
    await this.jobs.stop();
    this.abort.abort();
    await this.idle();
    // Runs stopped midway stay in the store: another instance resumes them now rather than after the lease.
    await this.jobs.release();
  }

  /** Brings a created, changed, suspended or unsuspended rule into the index. */
  async sync(row: RuleRow): Promise<void> {
    await this.index.sync(row);
  }

  remove(id: number): void {
    this.index.remove(id);
  }

  /** Resolves once every run queued so far has finished and been recorded. */
  async idle(): Promise<void> {
    await Promise.all(this.index.all().map((r) => r.state.chain));
    await this.history.idle();
  }

  get watched(): number {
    return this.index.watched;
  }

  /** Committed events: the readings written to rule_evals with their commit, evaluated in order. */
  readonly onCommitted = (events: CommittedEvent[]): void => {
    if (this.abort.signal.aborted) return;
    const rows: EvalInput[] = [];
    let unnamed = false;
    for (const e of events) {
      if (e.evaluation === undefined) {
        // SQLite: the row was written (unleased) without its id coming back; claimed from the store.
        if (e.evaluate) unnamed = true;
        continue;
      }
      rows.push({ id: e.evaluation, guid: e.guid, userId: e.userId, DA: e.DA, ts: e.ts, prev: e.prev ?? null, cause: e.cause ?? [] });
    }
    this.evaluations.submit(rows);
    if (unnamed) this.evaluations.claimNow();
  };

  private admitCandidate(c: Candidate, now: number): RuleFiring | null {
    if (c.rule.removed || c.rule.suspended) return null;
    c.before = c.rule.state.lastFired;
    if (!this.admit(c.rule, c.guid, c.cause, now)) return null;
    return { ruleId: c.rule.id, firedAt: now, timeoutMs: c.rule.timeoutMs, cause: c.cause };
  }

  /** The jobs of durable firings: run here in the rule's queue, or left to the store (behind, refused, failed). */
  private firedDurably(admitted: { c: Candidate; f: RuleFiring }[], outcomes: FiringOutcome[] | null): void {
    admitted.forEach(({ c, f }, i) => {
      const rule = c.rule;
      const st = rule.state;
      const o = outcomes?.[i];
      if (typeof o === "number") {
        this.jobs.adopt(o);
        st.chain = st.chain
          // The next turn: the responses of the committed events are written before the actions'
          // own disk writes (a queued command) take the event loop.
          .then(() => this.turns.next())
          .then(() => runCaused([...f.cause, rule.id], () => this.run(rule, f.firedAt, { id: o, step: 0, steps: [], sleep_until: null })))
          .catch((err: unknown) => this.log.error({ err, rid: rule.id }, "rule run failed unexpectedly"))
          .finally(() => st.pending--);
        return;
      }
      st.pending--;
      if (o === "behind") return; // its job runs after the rule's older one, where the store hands it
      this.stats.fired--;
      if (o === undefined && st.lastFired === f.firedAt) st.lastFired = c.before ?? null;
    });
  }

  /**
   * Whether a rule whose preconditions hold fires now: not within its timeout, not in a loop of its
   * own actions, not running away, its queue not full. If so its state counts the firing (pending).
   */
  private admit(rule: Compiled, guid: string, cause: readonly number[], now: number): boolean {
    const st = rule.state;
    if (st.lastFired !== null && now < st.lastFired + rule.timeoutMs) return false;
    if (cause.includes(rule.id) || cause.length >= MAX_CAUSE_CHAIN) {
      // Its own action chain (or a chain of rules this long) caused the event: firing again would
      // loop without end. Not fired; recorded in its history.
      this.stats.loops++;
      const error = cause.includes(rule.id)
        ? `loop stopped: the event on ${guid} was caused by this rule's own actions (rules ${cause.join(" -> ")})`
        : `loop stopped: the event on ${guid} comes from a chain of ${cause.length} rules (${cause.join(" -> ")})`;
      this.log.warn({ rid: rule.id, cause }, "rule loop stopped");
      this.record({ rule_id: rule.id, ts: now, ok: false, steps: [], error }, rule.userId);
      return false;
    }
    if (st.rate.fired(now)) {
      this.suspendRunaway(rule, now);
      return false;
    }
    if (st.pending >= this.maxPending) {
      this.stats.dropped++;
      this.log.warn({ rid: rule.id }, "rule fired faster than it runs: firing dropped");
      return false;
    }
    st.lastFired = now;
    st.pending++;
    this.stats.fired++;
    return true;
  }

  /**
   * A rule fired too fast for too long (firing-rate.ts): out of the index at once, then suspended
   * in the store (every instance hears of it), and why recorded in its history.
   */
  private suspendRunaway(rule: Compiled, now: number): void {
    this.stats.suspended++;
    rule.suspended = true;
    this.index.unindex(rule);
    const error = rule.state.rate.describe();
    rule.state.rate.reset();
    this.log.warn({ rid: rule.id, perSecond: rule.state.rate.perSecond, seconds: rule.state.rate.seconds }, "rule fired too fast for too long: suspended");
    this.record({ rule_id: rule.id, ts: now, ok: false, steps: [], error }, rule.userId);
    const suspend = async (): Promise<void> => {
      await this.store.rules.setSuspended(rule.id, true);
      const row = await this.store.rules.get(rule.id);
      if (row) await this.sync(row);
      this.announce(rule.id);
    };
    suspend().catch((err: unknown) => this.log.error({ err, rid: rule.id }, "suspending a runaway rule failed"));
  }

  /** A job whose instance lost its lease: resumed here, in the rule's queue. */
  private resume(job: RuleJobRow): void {
    const go = async (): Promise<void> => {
      let rule = this.index.get(job.rule_id);
      if (!rule) {
        await this.index.reload(job.rule_id);
        rule = this.index.get(job.rule_id);
      }
      if (!rule) {
        await this.jobs.finish(job.id);
        return;
      }
      const r = rule;
      this.stats.resumed++;
      r.state.pending++;
      r.state.chain = r.state.chain
        .then(() => runCaused([...job.cause, r.id], () => this.run(r, job.fired_at, job)))
        .catch((err: unknown) => this.log.error({ err, rid: r.id }, "resumed rule run failed unexpectedly"))
        .finally(() => r.state.pending--);
    };
    go().catch((err: unknown) => this.log.error({ err, job: job.id }, "resuming a rule run failed"));
  }

  private async run(rule: Compiled, firedAt: number, job?: JobState): Promise<void> {
    const out = await runActions(rule, { deps: this.deps, signal: this.abort.signal, clock: this.clock, jobs: this.jobs }, job);
    if (out === "handed") return;
    if (job) await this.jobs.finish(job.id);
    this.stats.runs++;
    if (out.error !== null) {
      this.stats.failed++;
      this.log.info({ rid: rule.id, error: out.error }, "rule run stopped");
    }
    if (rule.removed) return;
    this.record({ rule_id: rule.id, ts: firedAt, ok: out.error === null, steps: out.steps, error: out.error }, rule.userId);
  }

  private record(run: RuleRunRow, userId: number): void {
    this.history.record(run, userId);
  }
}
