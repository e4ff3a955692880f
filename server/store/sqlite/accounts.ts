/** Users, tokens and blocks on SQLite. */
import { type TokenFieldMatch, tokenWhere } from "../sql.js";
import type { Database, Statement } from "better-sqlite3";
import type { BlockRow, BlocksRepo, TokenMatch, TokenRow, TokensRepo, UserRow, UsersRepo } from "../types.js";
import type { StoreCache } from "./cache.js";
import { returning } from "./returning.js";


export function usersRepo(db: Database): UsersRepo {
  const insert = db.prepare("INSERT INTO users (name, password_hash, created) VALUES (?, ?, ?) RETURNING *");
  const byName = db.prepare("SELECT * FROM users WHERE name = ?");
  const byId = db.prepare("SELECT * FROM users WHERE id = ?");
  const count = db.prepare("SELECT count(*) AS n FROM users").pluck();
  const setPassword = db.prepare("UPDATE users SET password_hash = ? WHERE id = ?");
  return {
    async create(name, passwordHash, now) {
      return returning<UserRow>(insert, name, passwordHash, now) as UserRow;
    },
    async byName(name) {
      return (byName.get(name) as UserRow | undefined) ?? null;
    },
    async byId(id) {
      return (byId.get(id) as UserRow | undefined) ?? null;
    },
    async count() {
      return count.get() as number;
    },
    async setPassword(id, passwordHash) {
      setPassword.run(passwordHash, id);
    },
  };
}

function where(match: TokenFieldMatch): { sql: string; args: unknown[] } {
  return tokenWhere(match, () => "?");
}

export type TokenWrites = ReturnType<typeof tokenWrites>;

/** Token writes, synchronous, shared by the tokens and blocks repos for their transactions. */
export function tokenWrites(db: Database) {
  const insert = db.prepare(
    "INSERT INTO tokens (hash, kind, user_id, node_id, client_id, created) VALUES (@hash, @kind, @user_id, @node_id, @client_id, @created)",
  );
  // One statement per shape of match; each returns the hashes it deleted, for the auth service to
  // drop from its read cache (clearing it all on every activation sent a fleet to the slow path).
  const revokes = new Map<string, Statement>();
  const revoke = (match: TokenMatch): string[] => {
    const w = where(match);
    let stmt = revokes.get(w.sql);
    if (!stmt) {
      stmt = db.prepare(`DELETE FROM tokens WHERE ${w.sql} RETURNING hash`).pluck();
      revokes.set(w.sql, stmt);
    }
    return stmt.all(...w.args) as string[];
  };
  return { insert: (row: TokenRow) => insert.run(row), revoke };
}

export function tokensRepo(db: Database, writes: TokenWrites): TokensRepo {
  const find = db.prepare("SELECT * FROM tokens WHERE hash = ?");
  const replace = db.transaction((match: TokenMatch, row: TokenRow): string[] => {
    const gone = writes.revoke(match);
    writes.insert(row);
    return gone;
  });
  const lastRevoked = db.prepare("SELECT coalesce(max(seq), 0) FROM token_revocations").pluck();
  const revokedAfter = db.prepare("SELECT seq, hash FROM token_revocations WHERE seq > ? ORDER BY seq");
  const pruneRevoked = db.prepare("DELETE FROM token_revocations WHERE at < ?");
  let pruned = 0;
  return {
    async put(row) {
      writes.insert(row);
    },
    async revokedSince(after) {
      if (after === null) return { last: lastRevoked.get() as number, hashes: [] };
      const rows = revokedAfter.all(after) as { seq: number; hash: string }[];
      const now = Math.floor(Date.now() / 1000);
      if (now - pruned > 600) {
        // An hour is far longer than any cache waits between two reads.
        try {
          pruneRevoked.run(now - 3600);
          pruned = now;
        } catch (err) {
          // The write lock taken (this read runs outside the store's writer, busy_timeout 0): next poll.
          if (!/^SQLITE_(BUSY|LOCKED)/.test(String((err as { code?: unknown }).code))) throw err;
        }
      }
      return { last: rows.length > 0 ? (rows[rows.length - 1] as { seq: number }).seq : after, hashes: rows.map((r) => r.hash) };
    },
    async replace(match, row) {
      return replace(match, row);
    },
    async find(hash) {
      return (find.get(hash) as TokenRow | undefined) ?? null;
    },
    async revoke(match) {
      return writes.revoke(match);
    },
    async list(match) {
      const w = where(match);
      return db.prepare(`SELECT * FROM tokens WHERE ${w.sql} ORDER BY created`).all(...w.args) as TokenRow[];
    },
  };
}

export function blocksRepo(db: Database, cache: StoreCache, tokens: TokenWrites): BlocksRepo {
  const get = db.prepare("SELECT * FROM blocks WHERE node_id = ?");
  const list = db.prepare("SELECT * FROM blocks WHERE user_id = ? ORDER BY date_created, node_id");
  const claim = db.prepare(`
    INSERT INTO blocks (node_id, user_id, short_name, date_created, last_active, token_pending_until)
    VALUES (@node, @user, @node, @now, @now, @pending)
    ON CONFLICT (node_id) DO UPDATE SET user_id = excluded.user_id, token_pending_until = excluded.token_pending_until
    RETURNING *`);
  const setPending = db.prepare("UPDATE blocks SET token_pending_until = ? WHERE node_id = ?");
  const takePending = db.prepare(
    "UPDATE blocks SET token_pending_until = NULL WHERE node_id = ? AND token_pending_until IS NOT NULL AND token_pending_until >= ? RETURNING *",
  );
  const markAwaiting = db.prepare(
    "INSERT INTO activation_waits (node_id, until) VALUES (?, ?) ON CONFLICT (node_id) DO UPDATE SET until = max(until, excluded.until)",
  );
  const awaitingUntil = db.prepare("SELECT until FROM activation_waits WHERE node_id = ?").pluck();
  // The direct flow's claim and its new token: one transaction, so one flush per activation.
  const claimWithToken = db.transaction((nodeId: string, userId: number, now: number, row: TokenRow) => {
    const block = returning<BlockRow>(claim, { node: nodeId, user: userId, now, pending: null }) as BlockRow;
    const revoked = tokens.revoke({ node_id: nodeId, kind: "block" });
    tokens.insert(row);
    return { block, revoked };
  });
  const removeAll = db.transaction((nodeId: string) => {
    const ids = db.prepare("SELECT id FROM devices WHERE node_id = ?").pluck().all(nodeId) as number[];
    const delReadings = db.prepare("DELETE FROM readings WHERE device_id = ?");
    const delStaged = db.prepare("DELETE FROM readings_staged WHERE device_id = ?");
    for (const id of ids) {
      delReadings.run(id);
      delStaged.run(id);
    }
    db.prepare("DELETE FROM devices WHERE node_id = ?").run(nodeId);
    db.prepare("DELETE FROM commands WHERE node_id = ?").run(nodeId);
    db.prepare("DELETE FROM event_keys WHERE node_id = ?").run(nodeId);
    const revoked = tokens.revoke({ node_id: nodeId, kind: "block" });
    db.prepare("DELETE FROM blocks WHERE node_id = ?").run(nodeId);
    return revoked;
  });
  return {
    async get(nodeId) {
      return (get.get(nodeId) as BlockRow | undefined) ?? null;
    },
    async list(userId) {
      return list.all(userId) as BlockRow[];
    },
    async claim(nodeId, userId, now, pendingUntil) {
      return returning<BlockRow>(claim, { node: nodeId, user: userId, now, pending: pendingUntil }) as BlockRow;
    },
    async claimWithToken(nodeId, userId, now, token) {
      return claimWithToken(nodeId, userId, now, token);
    },
    async setPending(nodeId, pendingUntil) {
      setPending.run(pendingUntil, nodeId);
    },
    async takePending(nodeId, now) {
      return (takePending.get(nodeId, now) as BlockRow | undefined) ?? null;
    },
    async markAwaiting(nodeId, until) {
      markAwaiting.run(nodeId, until);
    },
    async awaitingUntil(nodeId) {
      return (awaitingUntil.get(nodeId) as number | undefined) ?? null;
    },
    async remove(nodeId) {
      const revoked = removeAll.immediate(nodeId);
      cache.forgetDevices();
      return revoked;
    },
  };
}
