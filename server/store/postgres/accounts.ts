/** Users, tokens, blocks, browser sessions, OAuth applications and codes, server keys on PostgreSQL. */
import { type TokenFieldMatch, tokenWhere } from "../sql.js";
import type pg from "pg";
import type {
  BlockRow,
  BlocksRepo,
  KeysRepo,
  OAuthAppRow,
  OAuthAppsRepo,
  OAuthCodeRow,
  OAuthCodesRepo,
  SessionRow,
  SessionsRepo,
  TokenMatch,
  TokenRow,
  TokensRepo,
  UserRow,
  UsersRepo,
} from "../types.js";
import { type Queryable, q, tx } from "./db.js";

export function usersRepo(pool: pg.Pool): UsersRepo {
  return {
    async create(name, passwordHash, now) {
      const [row] = await q<UserRow>(pool, "INSERT INTO users (name, password_hash, created) VALUES ($1, $2, $3) RETURNING *", [name, passwordHash, now]);
      return row as UserRow;
    },
    async byName(name) {
      return (await q<UserRow>(pool, "SELECT * FROM users WHERE name = $1", [name], "users.byName"))[0] ?? null;
    },
    async byId(id) {
      return (await q<UserRow>(pool, "SELECT * FROM users WHERE id = $1", [id], "users.byId"))[0] ?? null;
    },
    async count() {
      return ((await q<{ n: number }>(pool, "SELECT count(*) AS n FROM users"))[0] as { n: number }).n;
    },
    async setPassword(id, passwordHash) {
      await q(pool, "UPDATE users SET password_hash = $1 WHERE id = $2", [passwordHash, id]);
    },
  };
}

function where(match: TokenFieldMatch): { sql: string; args: unknown[] } {
  return tokenWhere(match, (n) => `$${n}`);
}

async function revokeOn(db: Queryable, match: TokenMatch): Promise<string[]> {
  const w = where(match);
  return (await q<{ hash: string }>(db, `DELETE FROM tokens WHERE ${w.sql} RETURNING hash`, w.args)).map((r) => r.hash);
}

const INSERT_TOKEN = "INSERT INTO tokens (hash, kind, user_id, node_id, client_id, created) VALUES ($1, $2, $3, $4, $5, $6)";
const tokenArgs = (r: TokenRow): unknown[] => [r.hash, r.kind, r.user_id, r.node_id, r.client_id, r.created];

export function tokensRepo(pool: pg.Pool): TokensRepo {
  return {
    async put(row) {
      await q(pool, INSERT_TOKEN, tokenArgs(row), "tokens.put");
    },
    async find(hash) {
      return (await q<TokenRow>(pool, "SELECT * FROM tokens WHERE hash = $1", [hash], "tokens.find"))[0] ?? null;
    },
    async replace(match, row) {
      return tx(pool, async (c) => {
        const gone = await revokeOn(c, match);
        await q(c, INSERT_TOKEN, tokenArgs(row), "tokens.put");
        return gone;
      });
    },
    async revoke(match) {
      return revokeOn(pool, match);
    },
    async list(match) {
      const w = where(match);
      return q<TokenRow>(pool, `SELECT * FROM tokens WHERE ${w.sql} ORDER BY created, hash`, w.args);
    },
  };
}

const CLAIM = `
  INSERT INTO blocks (node_id, user_id, short_name, date_created, last_active, token_pending_until)
  VALUES ($1, $2, $1, $3, $3, $4)
  ON CONFLICT (node_id) DO UPDATE SET user_id = excluded.user_id, token_pending_until = excluded.token_pending_until
  RETURNING *`;

export function blocksRepo(pool: pg.Pool): BlocksRepo {
  return {
    async get(nodeId) {
      return (await q<BlockRow>(pool, "SELECT * FROM blocks WHERE node_id = $1", [nodeId], "blocks.get"))[0] ?? null;
    },
    async list(userId) {
      return q<BlockRow>(pool, "SELECT * FROM blocks WHERE user_id = $1 ORDER BY date_created, node_id", [userId]);
    },
    async claim(nodeId, userId, now, pendingUntil) {
      return (await q<BlockRow>(pool, CLAIM, [nodeId, userId, now, pendingUntil], "blocks.claim"))[0] as BlockRow;
    },
    async claimWithToken(nodeId, userId, now, token) {
      return tx(pool, async (c) => {
        const block = (await q<BlockRow>(c, CLAIM, [nodeId, userId, now, null], "blocks.claim"))[0] as BlockRow;
        const revoked = await revokeOn(c, { node_id: nodeId, kind: "block" });
        await q(c, INSERT_TOKEN, tokenArgs(token), "tokens.put");
        return { block, revoked };
      });
    },
    async setPending(nodeId, pendingUntil) {
      await q(pool, "UPDATE blocks SET token_pending_until = $1 WHERE node_id = $2", [pendingUntil, nodeId]);
    },
    async takePending(nodeId, now) {
      const rows = await q<BlockRow>(
        pool,
        "UPDATE blocks SET token_pending_until = NULL WHERE node_id = $1 AND token_pending_until IS NOT NULL AND token_pending_until >= $2 RETURNING *",
        [nodeId, now],
      );
      return rows[0] ?? null;
    },
    async markAwaiting(nodeId, until) {
      await q(
        pool,
        "INSERT INTO activation_waits (node_id, until) VALUES ($1, $2) ON CONFLICT (node_id) DO UPDATE SET until = greatest(activation_waits.until, excluded.until)",
        [nodeId, until],
      );
    },
    async awaitingUntil(nodeId) {
      return (await q<{ until: number }>(pool, "SELECT until FROM activation_waits WHERE node_id = $1", [nodeId]))[0]?.until ?? null;
    },
    async remove(nodeId) {
      return tx(pool, async (c) => {
        await c.query("DELETE FROM readings WHERE device_id IN (SELECT id FROM devices WHERE node_id = $1)", [nodeId]);
        await c.query("DELETE FROM devices WHERE node_id = $1", [nodeId]);
        await c.query("DELETE FROM commands WHERE node_id = $1", [nodeId]);
        await c.query("DELETE FROM event_keys WHERE node_id = $1", [nodeId]);
        const revoked = await revokeOn(c, { node_id: nodeId, kind: "block" });
        await c.query("DELETE FROM blocks WHERE node_id = $1", [nodeId]);
        return revoked;
      });
    },
  };
}

export function sessionsRepo(pool: pg.Pool): SessionsRepo {
  return {
    async put(r) {
      await q(pool, "INSERT INTO sessions (hash, user_id, created, expires) VALUES ($1, $2, $3, $4)", [r.hash, r.user_id, r.created, r.expires]);
    },
    async find(hash) {
      return (await q<SessionRow>(pool, "SELECT * FROM sessions WHERE hash = $1", [hash], "sessions.find"))[0] ?? null;
    },
    async remove(hash) {
      await q(pool, "DELETE FROM sessions WHERE hash = $1", [hash]);
    },
    async prune(now) {
      return (await q(pool, "DELETE FROM sessions WHERE expires <= $1 RETURNING 1", [now])).length;
    },
  };
}

export function oauthAppsRepo(pool: pg.Pool): OAuthAppsRepo {
  return {
    async put(r) {
      await q(pool, "INSERT INTO oauth_apps (client_id, user_id, name, redirect_uri, secret_hash, created) VALUES ($1, $2, $3, $4, $5, $6)", [
        r.client_id,
        r.user_id,
        r.name,
        r.redirect_uri,
        r.secret_hash,
        r.created,
      ]);
    },
    async get(clientId) {
      return (await q<OAuthAppRow>(pool, "SELECT * FROM oauth_apps WHERE client_id = $1", [clientId]))[0] ?? null;
    },
    async list(userId) {
      return q<OAuthAppRow>(pool, "SELECT * FROM oauth_apps WHERE user_id = $1 ORDER BY created, client_id", [userId]);
    },
    async remove(clientId) {
      return (await q(pool, "DELETE FROM oauth_apps WHERE client_id = $1 RETURNING 1", [clientId])).length > 0;
    },
  };
}

export function oauthCodesRepo(pool: pg.Pool): OAuthCodesRepo {
  return {
    async put(r) {
      await q(pool, "INSERT INTO oauth_codes (hash, client_id, user_id, redirect_uri, expires) VALUES ($1, $2, $3, $4, $5)", [
        r.hash,
        r.client_id,
        r.user_id,
        r.redirect_uri,
        r.expires,
      ]);
    },
    async consume(hash) {
      // One statement decides: two concurrent exchanges of one code cannot both see it unused.
      const [fresh] = await q<OAuthCodeRow>(pool, "UPDATE oauth_codes SET used = true WHERE hash = $1 AND NOT used RETURNING *", [hash]);
      if (fresh) return { row: fresh, replayed: false };
      const [old] = await q<OAuthCodeRow>(pool, "SELECT * FROM oauth_codes WHERE hash = $1", [hash]);
      return old ? { row: old, replayed: true } : null;
    },
    async setToken(hash, tokenHash) {
      await q(pool, "UPDATE oauth_codes SET token_hash = $1 WHERE hash = $2", [tokenHash, hash]);
    },
    async prune(before) {
      return (await q(pool, "DELETE FROM oauth_codes WHERE expires <= $1 RETURNING 1", [before])).length;
    },
  };
}

export function keysRepo(pool: pg.Pool): KeysRepo {
  return {
    async getOrCreate(name, make, now) {
      await q(pool, "INSERT INTO server_keys (name, value, created) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING", [name, make(), now]);
      return ((await q<{ value: string }>(pool, "SELECT value FROM server_keys WHERE name = $1", [name]))[0] as { value: string }).value;
    },
  };
}
