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
  MetaPatch,
} from "../types.js";
import type { StoreCache } from "./cache.js";
import type { ReadingsStaging } from "./staging.js";
import type { IngestThread } from "./ingest-thread.js";

/** A devices row as SQLite keeps it: is_silent an integer, meta JSON text. */
type DeviceRecord = Omit<DeviceRow, "is_silent" | "meta"> & { is_silent: number; meta: string };

function parseObject(text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Idempotency keys deleted per transaction by a prune: a stop waits for one such batch at most. */
const PRUNE_BATCH = 10_000;

const toDevice = (r: DeviceRecord): DeviceRow => ({ ...r, is_silent: r.is_silent !== 0, meta: parseObject(r.meta) });

/** Sets `patch.value` at `patch.path` in a meta object (a copy), creating objects on the way. */
export function applyPatch(meta: Record<string, unknown>, patch: MetaPatch): Record<string, unknown> {
  const out = { ...meta };
  let at = out;
  patch.path.forEach((key, i) => {
    if (i === patch.path.length - 1) {
      at[key] = patch.value;
      return;
    }
    const next = at[key];
    const copy = typeof next === "object" && next !== null && !Array.isArray(next) ? { ...(next as Record<string, unknown>) } : {};
    at[key] = copy;
    at = copy;
  });
  return out;
}

export function devicesRepo(db: Database, cache: StoreCache): DevicesRepo {
  const list = db.prepare("SELECT * FROM devices WHERE user_id = ? ORDER BY id");
  const byGuid = db.prepare("SELECT * FROM devices WHERE guid = ?");
  const setShortName = db.prepare("UPDATE devices SET short_name = ? WHERE id = ?");
  const getMeta = db.prepare("SELECT meta FROM devices WHERE id = ?").pluck();
  const setMeta = db.prepare("UPDATE devices SET meta = ? WHERE id = ?");
  const patchMeta = db.transaction((id: number, patch: MetaPatch) => {
    const text = getMeta.get(id) as string | undefined;
    if (text !== undefined) setMeta.run(JSON.stringify(applyPatch(parseObject(text), patch)), id);
  });
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
      return (list.all(userId) as DeviceRecord[]).map(toDevice);
    },
    async byGuid(guid) {
      const r = byGuid.get(guid) as DeviceRecord | undefined;
      return r ? toDevice(r) : null;
    },
    async setShortName(id, name) {
      setShortName.run(name, id);
    },
    async patchMeta(id, patch) {
      patchMeta.immediate(id, patch);
    },
    async remove(id) {
      remove.immediate(id);
      cache.forgetDevices();
    },
  };
}

/**
 * The ingest transaction on a connection: idempotency keys, device lookup or creation, last value,
 * the meta patch, the staged reading, the block's last_active, as the Ingest service decided them.
 * Used on the main thread and by the ingest thread (ingest-worker.ts). `devices`: GUID -> id, looked
 * up first (only where every device deletion clears the same map, i.e. the main thread).
 */
export function ingestTransaction(
  db: Database,
  staging: ReadingsStaging,
  devices: Map<string, number> | null,
): { commit: (batch: IngestEvent[], now: number) => IngestResult[]; pruneKeys: (before: number, limit: number) => number } {
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
  // At most `limit` keys (through the ts index), each batch its own transaction.
  const pruneKeys = db.prepare("DELETE FROM event_keys WHERE (node_id, key) IN (SELECT node_id, key FROM event_keys WHERE ts < ? LIMIT ?)");
  // Watched readings only (IngestEvent.evaluate): the evaluation outbox, with the value before.
  const lastValue = db.prepare("SELECT last_da, last_ts FROM devices WHERE id = ?").raw();
  const insertEval = db.prepare("INSERT INTO rule_evals (device_id, user_id, guid, ts, da, prev, cause) VALUES (?, ?, ?, ?, ?, ?, ?)");
  const evaluate = (e: IngestEvent, deviceId: number, prev: string | null): void => {
    insertEval.run(deviceId, e.userId, e.guid, e.ts, e.DA, prev, e.cause?.join(",") ?? "");
  };
  // The callback delivery of a reading of a device with a callback (outbox.ts): one probe of the
  // callbacks table per reading, and none in a transaction when no device has a callback at all.
  const anyCallback = db.prepare("SELECT EXISTS (SELECT 1 FROM callbacks)").pluck();
  const insertDelivery = db.prepare(
    `INSERT INTO callback_outbox (device_id, user_id, ts, da, next_at)
     SELECT cb.device_id, d.user_id, ?, ?, ? FROM callbacks cb JOIN devices d ON d.id = cb.device_id WHERE cb.device_id = ?`,
  );

  const commitTx = db.transaction((batch: IngestEvent[], now: number): IngestResult[] => {
    const results: IngestResult[] = [];
    const callbacks = anyCallback.get() === 1;
    for (const e of batch) {
      if (e.touch !== undefined) touchBlock.run(e.node, e.userId, e.node, e.touch, e.touch);
      if (e.key !== undefined && seenKey.run(e.node, e.key, now).changes === 0) {
        results.push({ deviceId: 0, created: false, duplicate: true });
        continue;
      }
      const isReading = e.meta === undefined && e.kind !== "config";
      const found = devices?.get(e.guid) ?? (findDevice.get(e.guid) as number | undefined);
      let deviceId: number;
      if (found !== undefined) {
        deviceId = found;
        if (e.meta) updateMeta.run(JSON.stringify(applyPatch(parseObject(deviceMeta.get(deviceId) as string), e.meta)), deviceId);
        else if (isReading && e.evaluate) {
          // Stale (older than the device's last value) as the store's own rule below: not evaluated.
          const [da, ts] = lastValue.get(deviceId) as [string | null, number | null];
          if (ts === null || ts <= e.ts) {
            updateLast.run(e.DA, e.ts, deviceId, e.ts);
            evaluate(e, deviceId, da);
          }
        } else if (isReading) updateLast.run(e.DA, e.ts, deviceId, e.ts);
      } else if (e.existingOnly) {
        // Nothing is created: answered like a duplicate, so no listener sees it either.
        results.push({ deviceId: 0, created: false, duplicate: true });
        continue;
      } else {
        const meta = JSON.stringify(e.meta ? applyPatch({}, e.meta) : {});
        const isConfig = !isReading;
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
        if (!isConfig && e.evaluate) evaluate(e, deviceId, null);
      }
      const r: IngestResult = { deviceId, created: found === undefined, duplicate: false };
      if (isReading) {
        staging.add(deviceId, e.ts, e.num, e.DA);
        // A device created just now has no callback yet.
        if (callbacks && found !== undefined && insertDelivery.run(e.ts, e.DA, now, deviceId).changes > 0) r.outboxed = true;
      }
      results.push(r);
    }
    return results;
  });
  const commit = (batch: IngestEvent[], now: number): IngestResult[] => {
    // BEGIN IMMEDIATE: the write lock is taken (waiting for it) before the first read. A deferred
    // transaction that read first fails at once with "database is locked" when the other
    // connection committed meanwhile (the read snapshot cannot become a write), busy_timeout or not.
    const results = commitTx.immediate(batch, now);
    let staged = 0;
    batch.forEach((e, i) => {
      const r = results[i];
      if (r && !r.duplicate && e.meta === undefined && e.kind !== "config") staged++;
    });
    staging.committed(staged);
    return results;
  };
  return { commit, pruneKeys: (before, limit) => pruneKeys.run(before, limit).changes };
}

/** Block events: on the ingest thread when there is one, else in one FULL transaction on this connection. */
/**
 * `write`: how a write on this connection runs (the MainWriter's turn beside an ingest thread,
 * writer.ts); pruneKeys takes one per batch, so the ingest thread commits between two.
 */
export function eventsRepo(
  db: Database,
  cache: StoreCache,
  staging: ReadingsStaging,
  thread: IngestThread | null,
  write: <T>(fn: () => T) => Promise<T> = async (fn) => fn(),
): EventsRepo {
  const local = ingestTransaction(db, staging, cache.devices);
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
    async pruneKeys(before, signal) {
      // In batches, with a turn of the event loop between two: one DELETE of millions of keys (a
      // retention lowered) would hold the event loop, the ingest thread's writes and a stop for all of it.
      let total = 0;
      for (;;) {
        const n = await write(() => local.pruneKeys(before, PRUNE_BATCH));
        total += n;
        if (n < PRUNE_BATCH || signal?.aborted) return total;
        await new Promise((resolve) => setImmediate(resolve));
        if (signal?.aborted) return total;
      }
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
  // Its deliveries waiting in the outbox go with it (ON DELETE CASCADE).
  const remove = db.prepare("DELETE FROM callbacks WHERE device_id = ?");
  return {
    async get(deviceId) {
      return (get.get(deviceId) as CallbackRow | undefined) ?? null;
    },
    async set(row) {
      set.run(row);
    },
    async remove(deviceId) {
      return remove.run(deviceId).changes > 0;
    },
  };
}
