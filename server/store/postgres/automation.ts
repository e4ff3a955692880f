/** Sub-devices with their actuations, rules with their runs, and camera snapshots on PostgreSQL. */
import type pg from "pg";
import type { RuleRow, RuleRunRow, RulesRepo, SnapshotRow, SnapshotsRepo, SubDeviceRow, SubDevicesRepo } from "../types.js";
import { q, tx } from "./db.js";
import { fold } from "./history.js";

export function subDevicesRepo(pool: pg.Pool): SubDevicesRepo {
  return {
    async add(r) {
      const [row] = await q<SubDeviceRow>(
        pool,
        `INSERT INTO subdevices (device_id, sid, category, type, short_name, data, url, token_hash, created)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
        [r.device_id, r.sid, r.category, r.type, r.short_name, r.data, r.url, r.token_hash, r.created],
      );
      return row as SubDeviceRow;
    },
    async get(deviceId, sid) {
      return (await q<SubDeviceRow>(pool, "SELECT * FROM subdevices WHERE device_id = $1 AND sid = $2", [deviceId, sid]))[0] ?? null;
    },
    async byDevices(deviceIds) {
      if (deviceIds.length === 0) return [];
      return q<SubDeviceRow>(pool, "SELECT * FROM subdevices WHERE device_id = ANY($1::bigint[]) ORDER BY id", [deviceIds], "subdevices.byDevices");
    },
    async match(deviceId, category, type, key) {
      return q<SubDeviceRow>(
        pool,
        "SELECT * FROM subdevices WHERE device_id = $1 AND category = $2 AND type = $3 AND (data = $4 OR sid = $4) ORDER BY id",
        [deviceId, category, type, key],
        "subdevices.match",
      );
    },
    async update(r) {
      await q(pool, "UPDATE subdevices SET category = $2, type = $3, short_name = $4, data = $5, url = $6, token_hash = $7 WHERE id = $1", [
        r.id,
        r.category,
        r.type,
        r.short_name,
        r.data,
        r.url,
        r.token_hash,
      ]);
    },
    async remove(id) {
      return (await q(pool, "DELETE FROM subdevices WHERE id = $1 RETURNING 1", [id])).length > 0;
    },
    async addActuation(id, ts) {
      await q(pool, "INSERT INTO subdevice_actuations (subdevice_id, ts) VALUES ($1, $2)", [id, ts], "subdevices.actuate");
    },
    async actuationCount(id, from, to) {
      const [r] = await q<{ n: number }>(pool, "SELECT count(*) AS n FROM subdevice_actuations WHERE subdevice_id = $1 AND ts >= $2 AND ts <= $3", [id, from, to]);
      return (r as { n: number }).n;
    },
    async actuations(id, hq) {
      if (hq.interval === null) {
        const rows = await q<{ ts: number }>(pool, "SELECT ts FROM subdevice_actuations WHERE subdevice_id = $1 AND ts >= $2 AND ts <= $3 ORDER BY ts, id", [id, hq.from, hq.to]);
        return rows.map((r) => ({ t: r.ts, v: 1 }));
      }
      return fold(pool, "subdevice_actuations", "subdevice_id", "count(*)", false, id, hq);
    },
  };
}

const RULE_COLUMNS = "id, user_id, short_name, preconditions, actions, timeout, suspended, created";

export function rulesRepo(pool: pg.Pool): RulesRepo {
  return {
    async create(r) {
      const [row] = await q<RuleRow>(
        pool,
        `INSERT INTO rules (user_id, short_name, preconditions, actions, timeout, suspended, created)
         VALUES ($1, $2, $3::jsonb, $4::jsonb, $5, $6, $7) RETURNING ${RULE_COLUMNS}`,
        [r.user_id, r.short_name, JSON.stringify(r.preconditions), JSON.stringify(r.actions), r.timeout, r.suspended, r.created],
      );
      return row as RuleRow;
    },
    async get(id) {
      return (await q<RuleRow>(pool, `SELECT ${RULE_COLUMNS} FROM rules WHERE id = $1`, [id], "rules.get"))[0] ?? null;
    },
    async list(userId) {
      return q<RuleRow>(pool, `SELECT ${RULE_COLUMNS} FROM rules WHERE user_id = $1 ORDER BY id`, [userId]);
    },
    async count(userId) {
      return ((await q<{ n: number }>(pool, "SELECT count(*) AS n FROM rules WHERE user_id = $1", [userId]))[0] as { n: number }).n;
    },
    async all() {
      return q<RuleRow>(pool, `SELECT ${RULE_COLUMNS} FROM rules ORDER BY id`);
    },
    async update(r) {
      await q(pool, "UPDATE rules SET short_name = $2, preconditions = $3::jsonb, actions = $4::jsonb, timeout = $5 WHERE id = $1", [
        r.id,
        r.short_name,
        JSON.stringify(r.preconditions),
        JSON.stringify(r.actions),
        r.timeout,
      ]);
    },
    async setSuspended(id, suspended) {
      await q(pool, "UPDATE rules SET suspended = $2 WHERE id = $1", [id, suspended]);
    },
    async remove(id) {
      return (await q(pool, "DELETE FROM rules WHERE id = $1 RETURNING 1", [id])).length > 0;
    },
    async addRuns(runs, keep) {
      if (runs.length === 0) return;
      await tx(pool, async (c) => {
        // A rule deleted since its run has nothing left to record.
        const ids = [...new Set(runs.map((r) => r.rule_id))];
        const live = new Set((await q<{ id: number }>(c, "SELECT id FROM rules WHERE id = ANY($1::bigint[])", [ids])).map((r) => r.id));
        const kept = runs.filter((r) => live.has(r.rule_id));
        if (kept.length === 0) return;
        await q(
          c,
          `INSERT INTO rule_runs (rule_id, ts, ok, steps, error)
           SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::boolean[], $4::jsonb[], $5::text[])`,
          [kept.map((r) => r.rule_id), kept.map((r) => r.ts), kept.map((r) => r.ok), kept.map((r) => JSON.stringify(r.steps)), kept.map((r) => r.error)],
        );
        await q(
          c,
          `DELETE FROM rule_runs r USING (
             SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY rule_id ORDER BY id DESC) AS n FROM rule_runs WHERE rule_id = ANY($1::bigint[])) x
             WHERE n > $2) old WHERE r.id = old.id`,
          [[...live], keep],
        );
      });
    },
    async runs(ruleId) {
      return q<RuleRunRow>(pool, "SELECT rule_id, ts, ok, steps, error FROM rule_runs WHERE rule_id = $1 ORDER BY id DESC", [ruleId]);
    },
  };
}

export function snapshotsRepo(pool: pg.Pool): SnapshotsRepo {
  return {
    async put(deviceId, contentType, body, now) {
      const [r] = await q<{ seq: number }>(
        pool,
        `INSERT INTO camera_snapshots (device_id, seq, content_type, body, created) VALUES ($1, 1, $2, $3, $4)
         ON CONFLICT (device_id) DO UPDATE SET seq = camera_snapshots.seq + 1, content_type = excluded.content_type,
         body = excluded.body, created = excluded.created RETURNING seq`,
        [deviceId, contentType, body, now],
      );
      return (r as { seq: number }).seq;
    },
    async get(deviceId) {
      return (await q<SnapshotRow>(pool, "SELECT * FROM camera_snapshots WHERE device_id = $1", [deviceId]))[0] ?? null;
    },
  };
}
