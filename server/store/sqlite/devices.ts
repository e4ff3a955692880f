/** Devices, block events (the ingest transaction), commands and callbacks on SQLite. */
import type { Database } from "better-sqlite3";
import type {
  CallbackRow,
  CallbacksRepo,
  CommandRow,
  CommandsRepo,
  DeviceRow,
  DevicesRepo,
  EventsRepo,
  IngestEvent,
  IngestResult,
} from "../types.js";
import type { StoreCache } from "./cache.js";
import type { ReadingsStaging } from "./staging.js";
import type { IngestThread } from "./ingest-thread.js";

export function devicesRepo(db: Database, cache: StoreCache): DevicesRepo {
  const list = db.prepare("SELECT * FROM devices WHERE user_id = ? ORDER BY id");
  const byGuid = db.prepare("SELECT * FROM devices WHERE guid = ?");
  const setShortName = db.prepare("UPDATE devices SET short_name = ? WHERE id = ?");
  const setMeta = db.prepare("UPDATE devices SET meta = ? WHERE id = ?");
  const remove = db.transaction((id: number) => {
    const guid = db.prepare("SELECT guid FROM devices WHERE id = ?").pluck().get(id) as string | undefined;
    db.prepare("DELETE FROM readings WHERE device_id = ?").run(id);
    // Staged rows go with the device, in this transaction (the ingest thread may stage more at any time).
    db.prepare("DELETE FROM readings_staged WHERE device_id = ?").run(id);
    if (guid) db.prepare("DELETE FROM commands WHERE guid = ?").run(guid);
    db.prepare("DELETE FROM devices WHERE id = ?").run(id);
  });
  return {
    async list(userId) {
      return list.all(userId) as DeviceRow[];
    },
    async byGuid(guid) {
      return (byGuid.get(guid) as DeviceRow | undefined) ?? null;
    },
    async setShortName(id, name) {
      setShortName.run(name, id);
    },
    async setMeta(id, meta) {
      setMeta.run(meta, id);
    },
    async remove(id) {
      remove.immediate(id);
      cache.forgetDevices();
    },
  };
}

/** Applies a config event to a device's meta (DESIGN.md "Config events"). */
export function applyConfig(metaText: string, e: IngestEvent): string {
  let meta: Record<string, unknown>;
  try {
    meta = JSON.parse(metaText) as Record<string, unknown>;
  } catch {
    meta = {};
  }
  if (e.DA === "UNPLUG") meta.plugged = false;
  else if (e.DA === "PLUGIN") meta.plugged = true;
  else {
    const config = (typeof meta.config === "object" && meta.config !== null ? meta.config : {}) as Record<string, unknown>;
    config[e.DA] = { payload: e.payload ?? {}, timestamp: e.ts };
    meta.config = config;
  }
  return JSON.stringify(meta);
}

/**
 * The ingest transaction on a connection: idempotency keys, device lookup or creation, last value,
 * config into meta, the staged reading, the block's last_active. Used on the main thread and by
 * the ingest thread (ingest-worker.ts). `cacheDevices`: look devices up in `cache.devices` first
 * (only where every device deletion goes through the same cache, i.e. the main thread).
 */
export function ingestTransaction(
  db: Database,
  cache: StoreCache,
  staging: ReadingsStaging,
  cacheDevices: boolean,
): { commit: (batch: IngestEvent[], now: number) => IngestResult[]; pruneKeys: (before: number) => number } {
  const seenKey = db.prepare("INSERT OR IGNORE INTO event_keys (node_id, key, ts) VALUES (?, ?, ?)");
  const findDevice = db.prepare("SELECT id FROM devices WHERE guid = ?").pluck();
  const deviceMeta = db.prepare("SELECT meta FROM devices WHERE id = ?").pluck();
  const insertDevice = db.prepare(
    `INSERT INTO devices (guid, user_id, node_id, g, v, d, meta, last_da, last_ts, created)
     VALUES (@guid, @userId, @node, @G, @V, @D, @meta, @da, @ts, @now) RETURNING id`,
  );
  const updateLast = db.prepare(
    "UPDATE devices SET last_da = ?, last_ts = ? WHERE id = ? AND (last_ts IS NULL OR last_ts <= ?)",
  );
  const updateMeta = db.prepare("UPDATE devices SET meta = ? WHERE id = ?");
  const touchBlock = db.prepare(`
    INSERT INTO blocks (node_id, user_id, short_name, date_created, last_active)
    VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (node_id) DO UPDATE SET last_active = max(last_active, excluded.last_active)`);
  const pruneKeys = db.prepare("DELETE FROM event_keys WHERE ts < ?");

  const commitTx = db.transaction((batch: IngestEvent[], now: number): IngestResult[] => {
    const results: IngestResult[] = [];
    const nodes = new Map<string, number>();
    for (const e of batch) {
      nodes.set(e.node, e.userId);
      if (e.key !== undefined && seenKey.run(e.node, e.key, now).changes === 0) {
        results.push({ deviceId: 0, created: false, duplicate: true });
        continue;
      }
      const isConfig = e.kind === "config";
      const found = (cacheDevices ? cache.devices.get(e.guid) : undefined) ?? (findDevice.get(e.guid) as number | undefined);
      let deviceId: number;
      if (found !== undefined) {
        deviceId = found;
        if (isConfig) updateMeta.run(applyConfig(deviceMeta.get(deviceId) as string, e), deviceId);
        else updateLast.run(e.DA, e.ts, deviceId, e.ts);
      } else if (isConfig && e.DA === "UNPLUG") {
        // An UNPLUG for a device never seen creates nothing (V12_1.00 firmware sends one for each
        // empty port at boot): acknowledged like a duplicate, so no listener sees it either.
        results.push({ deviceId: 0, created: false, duplicate: true });
        continue;
      } else {
        const meta = isConfig ? applyConfig("{}", e) : "{}";
        deviceId = (
          insertDevice.get({
            guid: e.guid,
            userId: e.userId,
            node: e.node,
            G: e.G,
            V: e.V,
            D: e.D,
            meta,
            da: isConfig ? null : e.DA,
            ts: isConfig ? null : e.ts,
            now,
          }) as { id: number }
        ).id;
      }
      if (!isConfig) staging.add(deviceId, e.ts, e.num, e.DA);
      results.push({ deviceId, created: found === undefined, duplicate: false });
    }
    // last_active is kept to the second: a block posting many readings a second is touched once.
    for (const [node, userId] of nodes) if (cache.shouldTouch(node, now)) touchBlock.run(node, userId, node, now, now);
    return results;
  });
  const commit = (batch: IngestEvent[], now: number): IngestResult[] => {
    let results: IngestResult[];
    try {
      // BEGIN IMMEDIATE: the write lock is taken (waiting for it) before the first read. A deferred
      // transaction that read first fails at once with "database is locked" when the other
      // connection committed meanwhile (the read snapshot cannot become a write), busy_timeout or not.
      results = commitTx.immediate(batch, now);
    } catch (err) {
      cache.touched.clear(); // the touches of a rolled-back batch did not happen
      throw err;
    }
    let staged = 0;
    batch.forEach((e, i) => {
      const r = results[i];
      if (r && !r.duplicate && e.kind !== "config") staged++;
    });
    staging.committed(staged);
    return results;
  };
  return { commit, pruneKeys: (before) => pruneKeys.run(before).changes };
}

/** Block events: on the ingest thread when there is one, else in one FULL transaction on this connection. */
export function eventsRepo(db: Database, cache: StoreCache, staging: ReadingsStaging, thread: IngestThread | null): EventsRepo {
  const local = ingestTransaction(db, cache, staging, true);
  return {
    async commit(batch) {
      // On the ingest thread: its own connection, its own flush; the event loop only posts.
      if (thread) return thread.commit(batch, Date.now());
      const results = local.commit(batch, Date.now());
      // Remembered only after the transaction committed, so a rolled-back insert is never cached.
      batch.forEach((e, i) => {
        const r = results[i];
        if (r && !r.duplicate) cache.rememberDevice(e.guid, r.deviceId);
      });
      return results;
    },
    async pruneKeys(before) {
      return local.pruneKeys(before);
    },
  };
}

export function commandsRepo(db: Database): CommandsRepo {
  const add = db.prepare(
    `INSERT INTO commands (node_id, guid, g, v, d, da, created, expires)
     VALUES (@node_id, @guid, @g, @v, @d, @da, @created, @expires)`,
  );
  const pending = db.prepare("SELECT * FROM commands WHERE node_id = ? AND expires > ? ORDER BY id");
  const expire = db.prepare("DELETE FROM commands WHERE expires <= ?");
  return {
    async add(row) {
      return Number(add.run(row).lastInsertRowid);
    },
    async pending(nodeId, now) {
      return pending.all(nodeId, now) as CommandRow[];
    },
    async remove(ids) {
      if (ids.length === 0) return;
      db.prepare(`DELETE FROM commands WHERE id IN (${ids.map(() => "?").join(",")})`).run(...ids);
    },
    async expire(now) {
      return expire.run(now).changes;
    },
  };
}

export function callbacksRepo(db: Database): CallbacksRepo {
  const get = db.prepare("SELECT * FROM callbacks WHERE device_id = ?");
  const set = db.prepare(
    `INSERT INTO callbacks (device_id, url, secret, created) VALUES (@device_id, @url, @secret, @created)
     ON CONFLICT (device_id) DO UPDATE SET url = excluded.url, secret = excluded.secret`,
  );
  const remove = db.prepare("DELETE FROM callbacks WHERE device_id = ?");
  const allIds = db.prepare("SELECT device_id FROM callbacks").pluck();
  // Device ids that may have a callback (a superset: rows deleted with their device stay listed,
  // which costs one query that finds nothing). Every committed batch asks; most devices have none.
  let mayHave: Set<number> | null = null;
  const candidates = (): Set<number> => (mayHave ??= new Set(allIds.all() as number[]));
  return {
    async get(deviceId) {
      return (get.get(deviceId) as CallbackRow | undefined) ?? null;
    },
    async byDevices(ids) {
      const known = candidates();
      const deviceIds = known.size === 0 ? [] : [...new Set(ids)].filter((id) => known.has(id));
      const out: CallbackRow[] = [];
      for (let i = 0; i < deviceIds.length; i += 500) {
        const chunk = deviceIds.slice(i, i + 500);
        out.push(...(db.prepare(`SELECT * FROM callbacks WHERE device_id IN (${chunk.map(() => "?").join(",")})`).all(...chunk) as CallbackRow[]));
      }
      return out;
    },
    async set(row) {
      set.run(row);
      candidates().add(row.device_id);
    },
    async remove(deviceId) {
      candidates().delete(deviceId);
      return remove.run(deviceId).changes > 0;
    },
  };
}
