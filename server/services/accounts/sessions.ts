/**
 * Browser sessions. The cookie carries `<id>.<signature>`: the id is 32 random bytes, the signature
 * an HMAC of the id with the server's session key. The store keeps only sha256(id), so a copy of
 * the database does not let anyone in.
 */
import { createHmac } from "node:crypto";
import type { Store } from "../../store/types.js";
import { hashToken, newToken, safeEqual } from "../secrets.js";

export const SESSION_COOKIE = "bk_session";
/** Session lifetime: 7 days from login. */
export const SESSION_TTL_MS = 7 * 24 * 3600 * 1000;

export interface Session {
  userId: number;
  /** sha256 of the session id: the key of the session row and the CSRF binding. */
  hash: string;
}

export function sign(key: Buffer, value: string): string {
  return createHmac("sha256", key).update(value).digest("base64url");
}

/** `<value>.<sig>` */
export function signed(key: Buffer, value: string): string {
  return `${value}.${sign(key, value)}`;
}

/** The value of a `<value>.<sig>` string when its signature is right, else null. */
export function unsign(key: Buffer, cookie: string | undefined): string | null {
  if (!cookie) return null;
  const dot = cookie.lastIndexOf(".");
  if (dot <= 0) return null;
  const value = cookie.slice(0, dot);
  return safeEqual(cookie.slice(dot + 1), sign(key, value)) ? value : null;
}

export class Sessions {
  constructor(
    private readonly store: Store,
    private readonly key: () => Buffer,
    private readonly clock: () => number,
  ) {}

  /** Opens a session for the user; returns the cookie value. */
  async create(userId: number): Promise<string> {
    const id = newToken();
    const now = this.clock();
    await this.store.sessions.put({ hash: hashToken(id), user_id: userId, created: now, expires: now + SESSION_TTL_MS });
    return signed(this.key(), id);
  }

  /** The live session of a cookie value, or null (bad signature, unknown, expired). */
  async resolve(cookie: string | undefined): Promise<Session | null> {
    const id = unsign(this.key(), cookie);
    if (!id) return null;
    const hash = hashToken(id);
    const row = await this.store.sessions.find(hash);
    if (!row || row.expires <= this.clock()) return null;
    return { userId: row.user_id, hash };
  }

  async destroy(session: Session): Promise<void> {
    await this.store.sessions.remove(session.hash);
  }

  prune(): Promise<number> {
    return this.store.sessions.prune(this.clock());
  }
}
