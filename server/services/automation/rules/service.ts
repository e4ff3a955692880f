/** Rules as the user API shows them: CRUD, suspend/unsuspend, and the run history of one rule. */
import type { RuleBody, RuleJson, RuleRunJson } from "../../../../protocol/automation.js";
import { conflict, notFound } from "../../../errors.js";
import type { RuleRow, Store } from "../../../store/types.js";
import type { RuleEngine } from "./engine.js";
import { validateRule } from "./validate.js";

export function ruleJson(row: RuleRow): RuleJson {
  return {
    rid: row.id,
    shortName: row.short_name,
    preconditions: row.preconditions,
    actions: row.actions,
    timeout: row.timeout,
    store: {},
    suspended: row.suspended,
  };
}

export class RuleService {
  constructor(
    private readonly store: Store,
    private readonly engine: RuleEngine,
    private readonly clock: () => number = Date.now,
    private readonly maxRulesPerUser = 10_000,
  ) {}

  /** This process's engine is updated before the answer; the others hear of it on the Bus. */
  private changed(rid: number): void {
    this.engine.announce(rid);
  }

  private lookup(userId: number) {
    return async (guid: string) => {
      const row = await this.store.devices.byGuid(guid);
      return row && row.user_id === userId ? row : null;
    };
  }

  /** The user's rule or 404 (another user's rule is reported as unknown too). */
  private async owned(userId: number, rid: number): Promise<RuleRow> {
    const row = await this.store.rules.get(rid);
    if (!row || row.user_id !== userId) throw notFound(`unknown rule ${rid}`);
    return row;
  }

  async create(userId: number, body: RuleBody): Promise<number> {
    const v = await validateRule(body, this.lookup(userId));
    if ((await this.store.rules.count(userId)) >= this.maxRulesPerUser) {
      throw conflict(`you have ${this.maxRulesPerUser} rules, the most allowed: delete some first`);
    }
    const row = await this.store.rules.create({
      user_id: userId,
      short_name: v.shortName,
      preconditions: v.preconditions,
      actions: v.actions,
      timeout: v.timeout,
      suspended: false,
      created: this.clock(),
    });
    await this.engine.sync(row);
    this.changed(row.id);
    return row.id;
  }

  async list(userId: number): Promise<RuleJson[]> {
    return (await this.store.rules.list(userId)).map(ruleJson);
  }

  async get(userId: number, rid: number): Promise<RuleJson & { history: RuleRunJson[] }> {
    const row = await this.owned(userId, rid);
    const runs = await this.store.rules.runs(row.id);
    const history = runs.map((r) => ({
      timestamp: r.ts,
      ok: r.ok,
      steps: r.steps,
      error: r.error,
    }));
    return { ...ruleJson(row), history };
  }

  async update(userId: number, rid: number, body: RuleBody): Promise<void> {
    const row = await this.owned(userId, rid);
    const v = await validateRule(body, this.lookup(userId));
    const next: RuleRow = {
      ...row,
      short_name: v.shortName,
      preconditions: v.preconditions,
      actions: v.actions,
      timeout: v.timeout,
    };
    await this.store.rules.update(next);
    await this.engine.sync(next);
    this.changed(row.id);
  }

  async remove(userId: number, rid: number): Promise<void> {
    const row = await this.owned(userId, rid);
    await this.store.rules.remove(row.id);
    this.engine.remove(row.id);
    this.changed(row.id);
  }

  async suspend(userId: number, rid: number, suspended: boolean): Promise<void> {
    const row = await this.owned(userId, rid);
    await this.store.rules.setSuspended(row.id, suspended);
    await this.engine.sync({ ...row, suspended });
    this.changed(row.id);
  }
}
