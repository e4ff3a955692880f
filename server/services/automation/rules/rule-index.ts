/**
 * The rule engine's index (engine.ts): the compiled rules by id and by the GUIDs their
 * preconditions watch, so that a committed event costs one map lookup, with the values of the
 * watched devices; and the evaluation of readings against it (the rules a reading triggers while
 * their other preconditions hold). The engine reloads a rule here when the store's copy changed.
 * Apart from engine.ts, which decides what becomes of a triggered rule (admission, durable firing,
 * runs and their history).
 */
import type { IngestEvent, RuleRow, Store } from "../../../store/types.js";
import type { Candidate, Compiled } from "./engine-types.js";
import type { EvalInput } from "./evaluations.js";
import { FiringRate, type FiringRateOptions } from "./firing-rate.js";
import { handler } from "./handlers/index.js";
import { DeviceValues } from "./store-view.js";

export class RuleIndex {
  private readonly rules = new Map<number, Compiled>();
  private readonly index = new Map<string, Set<Compiled>>();
  private readonly values: DeviceValues;

  constructor(
    private readonly store: Store,
    /** Several instances share the store (RuleEngineOptions.shared). */
    private readonly shared: boolean,
    private readonly firingRate: Required<FiringRateOptions>,
  ) {
    this.values = new DeviceValues(store);
  }

  get(id: number): Compiled | undefined {
    return this.rules.get(id);
  }

  /** Every rule known, suspended ones too. */
  all(): Compiled[] {
    return [...this.rules.values()];
  }

  /** Whether a rule of the event's owner watches its device. */
  watches(e: IngestEvent): boolean {
    const rules = this.index.get(e.guid);
    if (rules) for (const r of rules) if (r.userId === e.userId) return true;
    return false;
  }

  /** Reads every rule again (at start, and after a networked Bus missed changes). */
  async reloadAll(): Promise<void> {
    const rows = await this.store.rules.all();
    const live = new Set(rows.map((r) => r.id));
    for (const id of [...this.rules.keys()]) if (!live.has(id)) this.remove(id);
    for (const row of rows) await this.sync(row);
  }

  /** Reads a rule again after another process changed it. */
  async reload(rid: number): Promise<void> {
    const row = await this.store.rules.get(rid);
    if (row) await this.sync(row);
    else this.remove(rid);
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
      state: old?.state ?? {
        lastFired: null,
        pending: 0,
        chain: Promise.resolve(),
        rate: new FiringRate(this.firingRate.maxFiringsPerSecond, this.firingRate.hotSeconds),
      },
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

  get watched(): number {
    return this.index.size;
  }

  /** Whether `e` triggers the rule while its other preconditions hold (several instances: read as committed). */
  private matches(rule: Compiled, e: { guid: string; DA: string }, prev: string | undefined): boolean | Promise<boolean> {
    let triggered = false;
    const others: Compiled["pre"] = [];
    for (const p of rule.pre) {
      if (p.guid === e.guid && p.h.triggers(p.params, prev, e.DA)) triggered = true;
      else if (this.shared && p.guid !== e.guid) others.push(p);
      else if (!p.h.holds(p.params, this.values.get(p.guid))) return false;
    }
    if (!triggered) return false;
    if (others.length === 0) return true;
    // Several instances: the other devices' events may have been committed elsewhere, so their
    // values are read as committed now rather than from this process's view.
    return Promise.all(others.map((p) => this.store.devices.byGuid(p.guid))).then((rows) => {
      rows.forEach((row) => {
        if (row?.last_da != null) this.values.set(row.guid, row.last_da, row.last_ts ?? 0);
      });
      return others.every((p, i) => p.h.holds(p.params, rows[i]?.last_da ?? undefined));
    });
  }

  /** Durable evaluation: the rules each reading triggers, in order (rejects if a store read failed). */
  async evaluateRows(rows: EvalInput[]): Promise<Candidate[]> {
    const found: Promise<Candidate | null>[] = [];
    for (const r of rows) {
      const rules = this.index.get(r.guid);
      if (!rules) continue;
      this.values.put(r.guid, r.DA, r.ts);
      for (const rule of rules) {
        if (rule.userId !== r.userId) continue;
        found.push(Promise.resolve(this.matches(rule, r, r.prev ?? undefined)).then((ok) => (ok ? { rule, cause: r.cause, guid: r.guid } : null)));
      }
    }
    return (await Promise.all(found)).filter((c): c is Candidate => c !== null);
  }

  unindex(rule: Compiled): void {
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
