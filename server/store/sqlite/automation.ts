/**
 * Automation on SQLite: sub-devices with their actuation counts, rules with their run history, and
 * the latest camera snapshot of each camera. Actuation counts fold in SQL the way readings do
 * (`history.ts`): one GROUP BY over the (subdevice_id, ts) index.
 */
import type { Database } from "better-sqlite3";
import { fixedWidthMs } from "../../../protocol/history.js";
import type {
  HistoryPoint,
  RuleRow,
  RuleRunRow,
  RulesRepo,
  SnapshotRow,
  SnapshotsRepo,
  SubDeviceRow,
  SubDevicesRepo,
} from "../types.js";
import { returning } from "./returning.js";

const YEAR = "CAST(strftime('%Y', ts / 1000, 'unixepoch') AS INTEGER)";
const MONTH_INDEX = `(${YEAR} * 12 + CAST(strftime('%m', ts / 1000, 'unixepoch') AS INTEGER) - 1)`;

export function subDevicesRepo(db: Database): SubDevicesRepo {
  const add = db.prepare(
    `INSERT INTO subdevices (device_id, sid, category, type, short_name, data, url, token_hash, created)
     VALUES (@device_id, @sid, @category, @type, @short_name, @data, @url, @token_hash, @created) RETURNING *`,
  );
  const get = db.prepare("SELECT * FROM subdevices WHERE device_id = ? AND sid = ?");
  const match = db.prepare(
    "SELECT * FROM subdevices WHERE device_id = ? AND category = ? AND type = ? AND (data = ? OR sid = ?) ORDER BY id",
  );
  const update = db.prepare(
    `UPDATE subdevices SET category = @category, type = @type, short_name = @short_name, data = @data,
     url = @url, token_hash = @token_hash WHERE id = @id`,
  );
  const remove = db.prepare("DELETE FROM subdevices WHERE id = ?");
  const addActuation = db.prepare("INSERT INTO subdevice_actuations (subdevice_id, ts) VALUES (?, ?)");
  const count = db.prepare("SELECT count(*) FROM subdevice_actuations WHERE subdevice_id = ? AND ts >= ? AND ts <= ?").pluck();
  const raw = db.prepare("SELECT ts FROM subdevice_actuations WHERE subdevice_id = ? AND ts >= ? AND ts <= ? ORDER BY ts, rowid");
  const fold = (bucket: string) =>
    db.prepare(
      `SELECT ${bucket} AS b, count(*) AS v FROM subdevice_actuations
       WHERE subdevice_id = @id AND ts >= @from AND ts <= @to GROUP BY b ORDER BY b`,
    );
  const fixed = fold("(ts - ts % @w)");
  const month = fold(`(${MONTH_INDEX} / @n) * @n`);
  const year = fold(`(${YEAR} / @n) * @n`);

  return {
    async add(row) {
      return returning<SubDeviceRow>(add, row) as SubDeviceRow;
    },
    async get(deviceId, sid) {
      return (get.get(deviceId, sid) as SubDeviceRow | undefined) ?? null;
    },
    async byDevices(deviceIds) {
      if (deviceIds.length === 0) return [];
      const out: SubDeviceRow[] = [];
      // SQLite caps bound parameters; chunk long device lists.
      for (let i = 0; i < deviceIds.length; i += 500) {
        const chunk = deviceIds.slice(i, i + 500);
        const rows = db
          .prepare(`SELECT * FROM subdevices WHERE device_id IN (${chunk.map(() => "?").join(",")}) ORDER BY id`)
          .all(...chunk) as SubDeviceRow[];
        out.push(...rows);
      }
      return out;
    },
    async match(deviceId, category, type, key) {
      return match.all(deviceId, category, type, key, key) as SubDeviceRow[];
    },
    async update(row) {
      update.run(row);
    },
    async remove(id) {
      return remove.run(id).changes > 0;
    },
    async addActuation(id, ts) {
      addActuation.run(id, ts);
    },
    async actuationCount(id, from, to) {
      return count.get(id, from, to) as number;
    },
    async actuations(id, q): Promise<HistoryPoint[]> {
      if (q.interval === null) {
        const rows = raw.all(id, q.from, q.to) as { ts: number }[];
        return rows.map((r) => ({ t: r.ts, v: 1 }));
      }
      const args = { id, from: q.from, to: q.to };
      const w = fixedWidthMs(q.interval);
      if (w !== null) {
        return (fixed.all({ ...args, w }) as { b: number; v: number }[]).map((r) => ({ t: r.b, v: r.v }));
      }
      const n = q.interval.count;
      if (q.interval.unit === "year") {
        return (year.all({ ...args, n }) as { b: number; v: number }[]).map((r) => ({ t: Date.UTC(r.b, 0, 1), v: r.v }));
      }
      return (month.all({ ...args, n }) as { b: number; v: number }[]).map((r) => ({
        t: Date.UTC(Math.floor(r.b / 12), r.b % 12, 1),
        v: r.v,
      }));
    },
  };
}

/** Rules and runs as SQLite keeps them: JSON text and integer flags. */
type RuleRecord = Omit<RuleRow, "preconditions" | "actions" | "suspended"> & {
  preconditions: string;
  actions: string;
  suspended: number;
  last_fired?: number | null;
};
type RunRecord = Omit<RuleRunRow, "ok" | "steps"> & { ok: number; steps: string };

const toRule = ({ last_fired: _lastFired, ...r }: RuleRecord): RuleRow => ({
  ...r,
  preconditions: JSON.parse(r.preconditions) as RuleRow["preconditions"],
  actions: JSON.parse(r.actions) as RuleRow["actions"],
  suspended: r.suspended !== 0,
});
const fromRule = <T extends Omit<RuleRow, "id"> | RuleRow>(r: T) => ({
  ...r,
  preconditions: JSON.stringify(r.preconditions),
  actions: JSON.stringify(r.actions),
  suspended: r.suspended ? 1 : 0,
});
const toRun = (r: RunRecord): RuleRunRow => ({ ...r, ok: r.ok !== 0, steps: JSON.parse(r.steps) as RuleRunRow["steps"] });

export function rulesRepo(db: Database): RulesRepo {
  const create = db.prepare(
    // Ids are never reused (sequence `rules`, migration 040): a deleted rule's rid must not come
    // back as another rule, nor a run written just after the deletion land in a new rule's history.
    `INSERT INTO rules (id, user_id, short_name, preconditions, actions, timeout, suspended, created)
     VALUES (
       (SELECT max(value, (SELECT coalesce(max(id), 0) FROM rules)) + 1 FROM sequences WHERE name = 'rules'),
       @user_id, @short_name, @preconditions, @actions, @timeout, @suspended, @created) RETURNING *`,
  );
  const get = db.prepare("SELECT * FROM rules WHERE id = ?");
  const list = db.prepare("SELECT * FROM rules WHERE user_id = ? ORDER BY id");
  const all = db.prepare("SELECT * FROM rules ORDER BY id");
  const count = db.prepare("SELECT count(*) FROM rules WHERE user_id = ?").pluck();
  const update = db.prepare(
    `UPDATE rules SET short_name = @short_name, preconditions = @preconditions, actions = @actions,
     timeout = @timeout WHERE id = @id`,
  );
  const setSuspended = db.prepare("UPDATE rules SET suspended = ? WHERE id = ?");
  const remove = db.prepare("DELETE FROM rules WHERE id = ?");
  const insertRun = db.prepare("INSERT INTO rule_runs (rule_id, ts, ok, steps, error) VALUES (@rule_id, @ts, @ok, @steps, @error)");
  const prune = db.prepare(
    "DELETE FROM rule_runs WHERE rule_id = ? AND id <= (SELECT id FROM rule_runs WHERE rule_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
  );
  const runs = db.prepare("SELECT rule_id, ts, ok, steps, error FROM rule_runs WHERE rule_id = ? ORDER BY id DESC");
  const exists = db.prepare("SELECT 1 FROM rules WHERE id = ?").pluck();
  const addRuns = db.transaction((runs: RuleRunRow[], keep: number) => {
    const touched = new Set<number>();
    for (const run of runs) {
      // A rule deleted since its run has nothing left to record.
      if (!exists.get(run.rule_id)) continue;
      insertRun.run({ ...run, ok: run.ok ? 1 : 0, steps: JSON.stringify(run.steps) });
      touched.add(run.rule_id);
    }
    for (const id of touched) prune.run(id, id, keep);
  });
  return {
    async create(row) {
      return toRule(returning<RuleRecord>(create, fromRule(row)) as RuleRecord);
    },
    async get(id) {
      const r = get.get(id) as RuleRecord | undefined;
      return r ? toRule(r) : null;
    },
    async list(userId) {
      return (list.all(userId) as RuleRecord[]).map(toRule);
    },
    async count(userId) {
      return count.get(userId) as number;
    },
    async all() {
      return (all.all() as RuleRecord[]).map(toRule);
    },
    async update(row) {
      const { id, short_name, preconditions, actions, timeout } = fromRule(row);
      update.run({ id, short_name, preconditions, actions, timeout });
    },
    async setSuspended(id, suspended) {
      setSuspended.run(suspended ? 1 : 0, id);
    },
    async remove(id) {
      return remove.run(id).changes > 0;
    },
    async addRuns(runs, keep) {
      if (runs.length > 0) addRuns.immediate(runs, keep);
    },
    async runs(ruleId) {
      return (runs.all(ruleId) as RunRecord[]).map(toRun);
    },
  };
}

export function snapshotsRepo(db: Database): SnapshotsRepo {
  const put = db.prepare(
    `INSERT INTO camera_snapshots (device_id, seq, content_type, body, created) VALUES (?, 1, ?, ?, ?)
     ON CONFLICT (device_id) DO UPDATE SET seq = seq + 1, content_type = excluded.content_type,
     body = excluded.body, created = excluded.created RETURNING seq`,
  );
  const get = db.prepare("SELECT * FROM camera_snapshots WHERE device_id = ?");
  return {
    async put(deviceId, contentType, body, now) {
      return (returning<{ seq: number }>(put, deviceId, contentType, body, now) as { seq: number }).seq;
    },
    async get(deviceId) {
      return (get.get(deviceId) as SnapshotRow | undefined) ?? null;
    },
  };
}
