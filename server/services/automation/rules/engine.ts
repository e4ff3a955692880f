/**
 * The rule engine (DESIGN.md "Rules"). Rules are indexed by the GUIDs their preconditions watch,
 * so a committed event costs one map lookup, not a scan of all rules. A rule fires on an event that
 * makes one of its preconditions true while all the others hold, at most once per `timeout`
 * seconds; suspended rules are not in the index. The runs of one rule are serial (queued, bounded);
 * its actions run in order and a failing one stops the run. Each run is recorded (short history).
 */
import { randomUUID } from "node:crypto";
import { setMaxListeners } from "node:events";
import type { Logger } from "pino";
import type { RuleRunJson } from "../../../../protocol/automation.js";
import type { Bus } from "../../../bus/types.js";
import type { RuleRow, RuleRunRow, Store } from "../../../store/types.js";
import type { CommittedEvent } from "../../ingest.js";
import { handler } from "./handlers/index.js";
import type { ActionDeps, ActionHandler, Params, PreconditionHandler, RunContext } from "./handlers/types.js";
import { DeviceValues } from "./store-view.js";
import { MAX_CAUSE_CHAIN, runCaused } from "./cause.js";

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
   * Several instances share the store: a firing with a timeout is claimed in the store first
   * (RulesRepo.claimFiring), so that the rule fires at most once per timeout across the cluster.
   */
  shared?: boolean;
}

/** Bus channel announcing a changed rule id, so that every process's index follows CRUD. */
export const RULES_CHANNEL = "rules:changed";

/** Hears of each run once its history row is written (the live stream's rule frames). */
export type RunListener = (userId: number, rid: number, ok: boolean, firedAt: number) => void;

/** Delay before run history is written, ms. */
const RECORD_DELAY_MS = 20;

interface Compiled {
  id: number;
  userId: number;
  timeoutMs: number;
  suspended: boolean;
  removed: boolean;
  pre: { h: PreconditionHandler; params: Params; guid: string }[];
  actions: { h: ActionHandler; params: Params }[];
  /** Shared by the versions of one rule, so an update keeps its timeout and its queue. */
  state: { lastFired: number | null; pending: number; chain: Promise<void> };
}

export class RuleEngine {
  private readonly rules = new Map<number, Compiled>();
  private readonly index = new Map<string, Set<Compiled>>();
  private readonly values: DeviceValues;
  private readonly abort = new AbortController();
  private readonly historyKeep: number;
  private readonly maxPending: number;
  private readonly shared: boolean;
  private unrecorded: { run: RuleRunRow; userId: number }[] = [];
  private readonly runListeners: RunListener[] = [];
  private readonly runsPerTurn: number;
  /** Runs waiting for a turn of the event loop (`turn()`), and whether the next turn is scheduled. */
  private readonly turnWaiters: (() => void)[] = [];
  private turnScheduled = false;
  private unsubscribe: () => void = () => {};
  private unsubscribeResync: (() => void) | undefined;
  private readonly tag = randomUUID();
  private flushing: Promise<void> | null = null;
  readonly stats = { fired: 0, runs: 0, failed: 0, dropped: 0, loops: 0 };

  constructor(
    private readonly store: Store,
    private readonly bus: Bus,
    private readonly deps: ActionDeps,
    private readonly log: Logger,
    options: RuleEngineOptions = {},
    private readonly clock: () => number = Date.now,
  ) {
    this.values = new DeviceValues(store);
    // Every run in flight (sleeps, snapshot waits) listens to the one stop signal.
    setMaxListeners(0, this.abort.signal);
    this.historyKeep = options.historyKeep ?? 20;
    this.maxPending = options.maxPending ?? 16;
    this.runsPerTurn = options.runsPerTurn ?? 64;
    this.shared = options.shared ?? false;
  }

  async start(): Promise<void> {
    this.unsubscribe = this.bus.subscribe(RULES_CHANNEL, (message) => {
      const [tag, rid] = message.split(" ");
      if (tag === this.tag) return;
      this.reload(Number(rid)).catch((err: unknown) => this.log.error({ err, rid }, "reloading a changed rule failed"));
    });
    // A networked Bus that reconnected may have missed rule changes: read them all again.
    this.unsubscribeResync = this.bus.onResync?.(() => {
      this.reloadAll().catch((err: unknown) => this.log.error({ err }, "reloading the rules failed"));
    });
    await this.reloadAll();
  }

  private async reloadAll(): Promise<void> {
    const rows = await this.store.rules.all();
    const live = new Set(rows.map((r) => r.id));
    for (const id of [...this.rules.keys()]) if (!live.has(id)) this.remove(id);
    for (const row of rows) await this.sync(row);
  }

  onRun(listener: RunListener): void {
    this.runListeners.push(listener);
  }

  /** Tells the engines of other processes that a rule changed (this one was synced already). */
  announce(rid: number): void {
    this.bus.publish(RULES_CHANNEL, `${this.tag} ${rid}`);
  }

  /** Reads a rule again after another process changed it. */
  private async reload(rid: number): Promise<void> {
    const row = await this.store.rules.get(rid);
    if (row) await this.sync(row);
    else this.remove(rid);
  }

  /** Aborts running actions (sleeps, snapshot waits) and waits until their runs are recorded. */
  async stop(): Promise<void> {
    this.unsubscribe();
    this.unsubscribeResync?.();
    this.abort.abort();
    await this.idle();
  }

  /** Brings a created, changed, suspended or unsuspended rule into the index. */
  async sync(row: RuleRow): Promise<void> {
    const old = this.rules.get(row.id);
    const rule: Compiled = {
      id: row.id,
      userId: row.user_id,
      timeoutMs: row.timeout * 1000,
      suspended: row.suspended,
      removed: false,
      pre: [],
      actions: [],
      state: old?.state ?? { lastFired: null, pending: 0, chain: Promise.resolve() },
    };
    for (const p of row.preconditions) {
      const h = handler(p.handler);
      if (h?.kind === "precondition") rule.pre.push({ h, params: p.params, guid: h.guid(p.params) });
    }
    for (const a of row.actions) {
      const h = handler(a.handler);
      if (h?.kind === "action") rule.actions.push({ h, params: a.params });
    }
    if (old) this.unindex(old);
    this.rules.set(row.id, rule);
    if (rule.suspended) return;
    for (const p of rule.pre) {
      await this.values.watch(p.guid);
      let set = this.index.get(p.guid);
      if (!set) this.index.set(p.guid, (set = new Set()));
      set.add(rule);
    }
  }

  remove(id: number): void {
    const rule = this.rules.get(id);
    if (!rule) return;
    rule.removed = true;
    this.unindex(rule);
    this.rules.delete(id);
  }

  /** Resolves once every run queued so far has finished and been recorded. */
  async idle(): Promise<void> {
    await Promise.all([...this.rules.values()].map((r) => r.state.chain));
    if (this.flushing) await this.flushing;
  }

  get watched(): number {
    return this.index.size;
  }

  readonly onCommitted = (events: CommittedEvent[]): void => {
    if (this.abort.signal.aborted) return;
    for (const e of events) {
      if (e.kind === "config") continue;
      const rules = this.index.get(e.guid);
      if (!rules) continue;
      const seen = this.values.set(e.guid, e.DA, e.ts);
      if (seen === "stale") continue;
      // A rule only hears its owner's devices (a GUID comes back under another account after an unpairing).
      for (const rule of rules) if (rule.userId === e.userId) this.evaluate(rule, e, seen.prev);
    }
  };

  private evaluate(rule: Compiled, e: CommittedEvent, prev: string | undefined): void {
    let triggered = false;
    for (const p of rule.pre) {
      if (p.guid === e.guid && p.h.triggers(p.params, prev, e.DA)) triggered = true;
      else if (!p.h.holds(p.params, this.values.get(p.guid))) return;
    }
    if (!triggered) return;
    const now = this.clock();
    const st = rule.state;
    if (st.lastFired !== null && now < st.lastFired + rule.timeoutMs) return;
    const cause = e.cause ?? [];
    if (cause.includes(rule.id) || cause.length >= MAX_CAUSE_CHAIN) {
      // Its own action chain (or a chain of rules this long) caused the event: firing again would
      // loop without end. Not fired; recorded in its history.
      this.stats.loops++;
      const error = cause.includes(rule.id)
        ? `loop stopped: the event on ${e.guid} was caused by this rule's own actions (rules ${cause.join(" -> ")})`
        : `loop stopped: the event on ${e.guid} comes from a chain of ${cause.length} rules (${cause.join(" -> ")})`;
      this.log.warn({ rid: rule.id, cause }, "rule loop stopped");
      this.record({ rule_id: rule.id, ts: now, ok: false, steps: [], error }, rule.userId);
      return;
    }
    if (st.pending >= this.maxPending) {
      this.stats.dropped++;
      this.log.warn({ rid: rule.id }, "rule fired faster than it runs: firing dropped");
      return;
    }
    st.lastFired = now;
    st.pending++;
    this.stats.fired++;
    st.chain = st.chain
      // The next turn: the responses of the committed events are written before the actions'
      // own disk writes (a queued command) take the event loop.
      .then(() => this.turn())
      .then(async () => {
        // Across instances: another one may have fired this rule within its timeout.
        if (this.shared && rule.timeoutMs > 0 && !(await this.store.rules.claimFiring(rule.id, now, rule.timeoutMs))) {
          this.stats.fired--;
          return;
        }
        await runCaused([...cause, rule.id], () => this.run(rule, now));
      })
      .catch((err: unknown) => this.log.error({ err, rid: rule.id }, "rule run failed unexpectedly"))
      .finally(() => st.pending--);
  }

  /**
   * Resolves in a later turn of the event loop, at most `runsPerTurn` runs per turn: the runs
   * fired by one event start spread over as many turns as it takes, with I/O (other requests)
   * served between them.
   */
  private turn(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.turnWaiters.push(resolve);
      if (this.turnScheduled) return;
      this.turnScheduled = true;
      const next = (): void => {
        for (const f of this.turnWaiters.splice(0, this.runsPerTurn)) f();
        if (this.turnWaiters.length > 0) setImmediate(next);
        else this.turnScheduled = false;
      };
      setImmediate(next);
    });
  }

  private async run(rule: Compiled, firedAt: number): Promise<void> {
    const ctx: RunContext = { userId: rule.userId, deps: this.deps, carry: {}, signal: this.abort.signal };
    const steps: RuleRunJson["steps"] = [];
    let error: string | null = null;
    for (const a of rule.actions) {
      if (rule.removed || this.abort.signal.aborted) {
        error = rule.removed ? "the rule was deleted during the run" : "the rule engine stopped";
        break;
      }
      const t0 = this.clock();
      try {
        const result = await a.h.run(a.params, ctx);
        steps.push({ handler: a.h.name, ok: true, result, ms: this.clock() - t0 });
      } catch (err) {
        error = `${a.h.name}: ${(err as Error).message}`;
        steps.push({ handler: a.h.name, ok: false, error: (err as Error).message, ms: this.clock() - t0 });
        break;
      }
    }
    this.stats.runs++;
    if (error !== null) {
      this.stats.failed++;
      this.log.info({ rid: rule.id, error }, "rule run stopped");
    }
    if (rule.removed) return;
    this.record({ rule_id: rule.id, ts: firedAt, ok: error === null, steps, error }, rule.userId);
  }

  /**
   * Run history is written in batches a few ms later, in one transaction: off the path of the
   * command that the run just queued, and one disk sync for many runs.
   */
  private record(run: RuleRunRow, userId: number): void {
    this.unrecorded.push({ run, userId });
    this.flushing ??= new Promise<void>((resolve) => {
      setTimeout(() => {
        const runs = this.unrecorded.splice(0);
        this.flushing = null;
        this.store.rules
          .addRuns(
            runs.map((r) => r.run),
            this.historyKeep,
          )
          .catch((err: unknown) => this.log.warn({ err, runs: runs.length }, "recording rule runs failed"))
          .finally(() => {
            for (const { run, userId } of runs) for (const l of this.runListeners) l(userId, run.rule_id, run.ok, run.ts);
            resolve();
          });
      }, RECORD_DELAY_MS);
    });
  }

  private unindex(rule: Compiled): void {
    for (const p of rule.pre) {
      const set = this.index.get(p.guid);
      if (!set) continue;
      set.delete(rule);
      if (set.size === 0) {
        this.index.delete(p.guid);
        this.values.forget(p.guid);
      }
    }
  }
}
