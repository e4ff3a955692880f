/**
 * Accounts of the embedded MQTT broker: one user name and password per node, the password kept
 * only as a scrypt hash, `scrypt$<salt base64>$<hash base64>` (`blockkit gateway mqtt-password`
 * prints one). Checks are constant-time, and an unknown user costs the same scrypt as a known one.
 */
import { randomBytes, scryptSync, timingSafeEqual } from "node:crypto";

const KEY_BYTES = 32;
const HASH_RE = /^scrypt\$([A-Za-z0-9+/=]{16,})\$([A-Za-z0-9+/=]{40,})$/;
const DUMMY = `scrypt$${Buffer.alloc(16).toString("base64")}$${Buffer.alloc(KEY_BYTES).toString("base64")}`;

export function hashMqttPassword(password: string): string {
  const salt = randomBytes(16);
  return `scrypt$${salt.toString("base64")}$${scryptSync(password, salt, KEY_BYTES).toString("base64")}`;
}

export function isMqttPasswordHash(s: string): boolean {
  return HASH_RE.test(s);
}

export class MqttUsers {
  private readonly hashes: Map<string, string>;

  /** `users`: user name -> hash. Throws a TypeError naming a malformed hash. */
  constructor(users: readonly { username: string; passwordHash: string }[]) {
    this.hashes = new Map();
    for (const u of users) {
      if (!isMqttPasswordHash(u.passwordHash)) throw new TypeError(`mqtt user ${u.username}: passwordHash must be scrypt$<salt>$<hash>`);
      this.hashes.set(u.username, u.passwordHash);
    }
  }

  check(username: string | undefined, password: Buffer | undefined): boolean {
    const hash = (username !== undefined && this.hashes.get(username)) || DUMMY;
    const [, salt, want] = HASH_RE.exec(hash) as RegExpExecArray;
    const got = scryptSync(password ?? Buffer.alloc(0), Buffer.from(salt as string, "base64"), KEY_BYTES);
    return timingSafeEqual(got, Buffer.from(want as string, "base64")) && hash !== DUMMY;
  }
}
