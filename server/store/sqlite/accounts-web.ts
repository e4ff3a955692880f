/** Browser sessions, OAuth applications and codes, and server keys on SQLite. */
import type { Database } from "better-sqlite3";
import type { KeysRepo, OAuthAppRow, OAuthAppsRepo, OAuthCodeRow, OAuthCodesRepo, SessionRow, SessionsRepo } from "../types.js";
import { returning } from "./returning.js";

export function sessionsRepo(db: Database): SessionsRepo {
  const insert = db.prepare("INSERT INTO sessions (hash, user_id, created, expires) VALUES (@hash, @user_id, @created, @expires)");
  const find = db.prepare("SELECT * FROM sessions WHERE hash = ?");
  const remove = db.prepare("DELETE FROM sessions WHERE hash = ?");
  const prune = db.prepare("DELETE FROM sessions WHERE expires <= ?");
  return {
    async put(row) {
      insert.run(row);
    },
    async find(hash) {
      return (find.get(hash) as SessionRow | undefined) ?? null;
    },
    async remove(hash) {
      remove.run(hash);
    },
    async prune(now) {
      return prune.run(now).changes;
    },
  };
}

export function oauthAppsRepo(db: Database): OAuthAppsRepo {
  const insert = db.prepare(
    "INSERT INTO oauth_apps (client_id, user_id, name, redirect_uri, secret_hash, created) VALUES (@client_id, @user_id, @name, @redirect_uri, @secret_hash, @created)",
  );
  const get = db.prepare("SELECT * FROM oauth_apps WHERE client_id = ?");
  const list = db.prepare("SELECT * FROM oauth_apps WHERE user_id = ? ORDER BY created, client_id");
  const remove = db.prepare("DELETE FROM oauth_apps WHERE client_id = ?");
  return {
    async put(row) {
      insert.run(row);
    },
    async get(clientId) {
      return (get.get(clientId) as OAuthAppRow | undefined) ?? null;
    },
    async list(userId) {
      return list.all(userId) as OAuthAppRow[];
    },
    async remove(clientId) {
      return remove.run(clientId).changes > 0;
    },
  };
}

type CodeRecord = Omit<OAuthCodeRow, "used"> & { used: number };
const toCode = (r: CodeRecord | undefined): OAuthCodeRow | undefined => (r ? { ...r, used: r.used !== 0 } : undefined);

export function oauthCodesRepo(db: Database): OAuthCodesRepo {
  const insert = db.prepare(
    "INSERT INTO oauth_codes (hash, client_id, user_id, redirect_uri, expires) VALUES (@hash, @client_id, @user_id, @redirect_uri, @expires)",
  );
  const markUsed = db.prepare("UPDATE oauth_codes SET used = 1 WHERE hash = ? AND used = 0 RETURNING *");
  const find = db.prepare("SELECT * FROM oauth_codes WHERE hash = ?");
  const setToken = db.prepare("UPDATE oauth_codes SET token_hash = ? WHERE hash = ?");
  const prune = db.prepare("DELETE FROM oauth_codes WHERE expires <= ?");
  // One statement decides: two concurrent exchanges of one code cannot both see it unused.
  const consume = db.transaction((hash: string): { row: OAuthCodeRow; replayed: boolean } | null => {
    const fresh = toCode(returning<CodeRecord>(markUsed, hash));
    if (fresh) return { row: fresh, replayed: false };
    const old = toCode(find.get(hash) as CodeRecord | undefined);
    return old ? { row: old, replayed: true } : null;
  });
  return {
    async put(row) {
      insert.run(row);
    },
    async consume(hash) {
      return consume(hash);
    },
    async setToken(hash, tokenHash) {
      setToken.run(tokenHash, hash);
    },
    async prune(before) {
      return prune.run(before).changes;
    },
  };
}

export function keysRepo(db: Database): KeysRepo {
  const insert = db.prepare("INSERT INTO server_keys (name, value, created) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING");
  const get = db.prepare("SELECT value FROM server_keys WHERE name = ?").pluck();
  return {
    async getOrCreate(name, make, now) {
      insert.run(name, make(), now);
      return get.get(name) as string;
    },
  };
}
