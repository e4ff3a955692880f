/** Parsers for command-line values: each names the option and the value it refused. */
import { InvalidArgumentError } from "commander";
import { MIN_KEY_RETENTION_MS } from "../server/services/ingest.js";
import { parseNetwork, trustedProxies } from "../server/services/networks.js";
import { publicUrl as checkPublicUrl } from "../server/services/public-url.js";
import { type PartitionInterval, isPartitionInterval } from "../server/store/postgres/partition-ranges.js";
import { parseStoreUrl } from "../server/store/url.js";

export function port(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535) throw new InvalidArgumentError(`"${value}" is not a port number (0-65535)`);
  return n;
}

export function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`"${value}" is not a positive number`);
  return n;
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n <= 0 || !Number.isSafeInteger(n)) throw new InvalidArgumentError(`"${value}" is not a positive whole number`);
  return n;
}

export function wholeNumber(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError(`"${value}" is not a whole number`);
  return n;
}

export function url(value: string): string {
  try {
    const u = new URL(value);
    if (!u.protocol) throw new Error("no scheme");
  } catch {
    throw new InvalidArgumentError(`"${value}" is not a URL`);
  }
  return value;
}

export function userName(value: string): string {
  if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(value)) {
    throw new InvalidArgumentError(`"${value}" is not a user name (1-64 letters, digits, _ . @ -)`);
  }
  return value;
}

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export function logLevel(value: string): string {
  if (!LOG_LEVELS.includes(value)) throw new InvalidArgumentError(`"${value}" is not one of ${LOG_LEVELS.join(", ")}`);
  return value;
}

/** --db: a store URL (server/store/index.ts), checked here so that a typo is refused before anything starts. */
export function dbUrl(value: string): string {
  try {
    parseStoreUrl(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return value;
}

/**
 * The store a command opens: --db, else BLOCKKIT_DB, else the directory of --data. `dataDir` is
 * where the server keeps its files (the store's directory for an embedded store).
 */
export function storeLocation(flags: { db?: string | undefined; data: string }): { url: string; dataDir: string } {
  const url = flags.db ?? process.env.BLOCKKIT_DB ?? `sqlite:${flags.data}`;
  const where = parseStoreUrl(url);
  return { url, dataDir: where.kind === "sqlite" && (flags.db !== undefined || process.env.BLOCKKIT_DB !== undefined) ? where.dir : flags.data };
}

const DURATION_UNITS: Record<string, number> = { h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** A duration such as 36h, 90d or 52w, in milliseconds. */
export function duration(value: string): number {
  const m = /^(\d+)(h|d|w)$/.exec(value);
  if (!m || Number(m[1]) <= 0) throw new InvalidArgumentError(`"${value}" is not a duration: a positive number and h, d or w (e.g. 90d)`);
  return Number(m[1]) * (DURATION_UNITS[m[2] as string] as number);
}

/**
 * --idempotency-retention (and BLOCKKIT_IDEMPOTENCY_RETENTION): a duration such as 90m, 36h or 7d,
 * at least the 1 h that covers a gateway's retry of a lost answer (server/services/ingest.ts).
 */
export function keyRetention(value: string): number {
  const m = /^(\d+)(m|h|d|w)$/.exec(value);
  if (!m) throw new InvalidArgumentError(`"${value}" is not a duration: a whole number and m, h, d or w (e.g. 36h)`);
  const ms = Number(m[1]) * (m[2] === "m" ? 60_000 : (DURATION_UNITS[m[2] as string] as number));
  if (ms < MIN_KEY_RETENTION_MS) {
    throw new InvalidArgumentError(`"${value}" is under the 1h minimum: a gateway sends a request again up to 2 min 15 s after a lost answer, and the key must still be known then`);
  }
  return ms;
}

/** --partition-interval: day, week or month. */
export function partitionInterval(value: string): PartitionInterval {
  if (!isPartitionInterval(value)) throw new InvalidArgumentError(`"${value}" is not a partition interval: day, week or month`);
  return value;
}

/**
 * --outbound-allow / --outbound-deny: networks (CIDR or one address), comma- or space-separated,
 * the option repeatable; each is checked here so that a typo is refused before anything starts.
 */
export function networks(value: string, previous: string[] = []): string[] {
  const list = value.split(/[\s,]+/).filter((v) => v !== "");
  for (const n of list) {
    try {
      parseNetwork(n);
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
  }
  return [...previous, ...list];
}

/** --trust-proxy: proxies' addresses or networks, comma- or space-separated (networks.ts trustedProxies). */
export function proxies(value: string): string[] {
  try {
    return trustedProxies(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/** --public-url, --public-stream-url: an http(s) address without credentials, query or fragment. */
export function publicUrl(value: string): string {
  try {
    return checkPublicUrl(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}
