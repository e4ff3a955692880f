/** Devices, commands and callbacks on PostgreSQL (block events: events.ts). */
import type pg from "pg";
import type { CallbackRow, CallbacksRepo, CommandRow, CommandsRepo, DeviceRow, DevicesRepo } from "../types.js";
import { pgJson, pgText, q, tx } from "./db.js";

export function devicesRepo(pool: pg.Pool): DevicesRepo {
  return {
    async list(userId) {
      return q<DeviceRow>(pool, "SELECT * FROM devices WHERE user_id = $1 ORDER BY id", [userId], "devices.list");
    },
    async byGuid(guid) {
      return (await q<DeviceRow>(pool, "SELECT * FROM devices WHERE guid = $1", [guid], "devices.byGuid"))[0] ?? null;
    },
    async setShortName(id, name) {
      await q(pool, "UPDATE devices SET short_name = $1 WHERE id = $2", [pgText(name), id]);
    },
    async patchMeta(id, patch) {
      await q(pool, "UPDATE devices SET meta = blockkit_meta_set(meta, $2::text[], $3::jsonb) WHERE id = $1", [id, patch.path.map(pgText), pgJson(patch.value)]);
    },
    async remove(id) {
      await tx(pool, async (c) => {
        const [row] = (await c.query<{ guid: string }>("DELETE FROM devices WHERE id = $1 RETURNING guid", [id])).rows;
        await c.query("DELETE FROM readings WHERE device_id = $1", [id]);
        if (row) await c.query("DELETE FROM commands WHERE guid = $1", [row.guid]);
      });
    },
  };
}

export function commandsRepo(pool: pg.Pool): CommandsRepo {
  return {
    async add(r) {
      const [row] = await q<{ id: number }>(
        pool,
        "INSERT INTO commands (node_id, guid, g, v, d, da, created, expires) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        [r.node_id, r.guid, r.g, r.v, r.d, r.da, r.created, r.expires],
        "commands.add",
      );
      return (row as { id: number }).id;
    },
    async pending(nodeId, now) {
      return q<CommandRow>(pool, "SELECT * FROM commands WHERE node_id = $1 AND expires > $2 ORDER BY id", [nodeId, now], "commands.pending");
    },
    async remove(ids) {
      if (ids.length > 0) await q(pool, "DELETE FROM commands WHERE id = ANY($1::bigint[])", [ids], "commands.remove");
    },
    async expire(now) {
      return (await q(pool, "DELETE FROM commands WHERE expires <= $1 RETURNING 1", [now])).length;
    },
  };
}

export function callbacksRepo(pool: pg.Pool): CallbacksRepo {
  return {
    async get(deviceId) {
      return (await q<CallbackRow>(pool, "SELECT * FROM callbacks WHERE device_id = $1", [deviceId]))[0] ?? null;
    },
    async set(r) {
      await q(
        pool,
        `INSERT INTO callbacks (device_id, url, secret, created) VALUES ($1, $2, $3, $4)
         ON CONFLICT (device_id) DO UPDATE SET url = excluded.url, secret = excluded.secret`,
        [r.device_id, r.url, r.secret, r.created],
      );
    },
    async remove(deviceId) {
      return (await q(pool, "DELETE FROM callbacks WHERE device_id = $1 RETURNING 1", [deviceId])).length > 0;
    },
  };
}
