/**
 * The pool and the two helpers every PostgreSQL repo uses: `q()` for one statement (prepared when
 * named) and `tx()` for a transaction, retried on a deadlock or a serialization failure. A lost or
 * refused connection becomes 503 (`unavailable`), never a 500: the servers answer 503 while
 * PostgreSQL restarts and recover on their own when it is back (the pool reconnects).
 */
import pg from "pg";
import { ServiceError, unavailable } from "../../errors.js";

/** int8 and numeric as JS numbers: ids, times (epoch ms) and counts stay below 2^53. */
const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === 20 || oid === 1700) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format);
  },
};

export interface PgConfig {
  /** postgres://… ; a `schema` query parameter puts every table in that schema (tests). */
  url: string;
  /** Connections in the pool. Default 10. */
  max?: number;
}

/** Splits the blockkit-only `schema` parameter off a URL. */
export function splitSchema(url: string): { url: string; schema: string | null } {
  const u = new URL(url);
  const schema = u.searchParams.get("schema");
  u.searchParams.delete("schema");
  if (schema !== null && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new TypeError(`schema "${schema}" is not a plain lower-case identifier`);
  return { url: u.toString(), schema };
}

/** The time a new connection may take, when the URL does not say (libpq's `connect_timeout`). */
export const CONNECT_TIMEOUT_S = 5;

/**
 * Splits libpq's `connect_timeout` parameter (whole seconds, 1 to 3600) off a URL: the time a new
 * connection may take before it fails. Default CONNECT_TIMEOUT_S.
 */
export function splitConnectTimeout(url: string): { url: string; timeoutMs: number } {
  const u = new URL(url);
  const raw = u.searchParams.get("connect_timeout");
  if (raw === null) return { url, timeoutMs: CONNECT_TIMEOUT_S * 1000 };
  if (!/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > 3600)
    throw new TypeError(`connect_timeout "${raw}" is not a whole number of seconds from 1 to 3600`);
  u.searchParams.delete("connect_timeout");
  return { url: u.toString(), timeoutMs: Number(raw) * 1000 };
}

/** Client settings for every connection: durable commits, the schema, bigint/numeric as numbers. */
export function clientConfig(url: string): pg.ClientConfig {
  const { url: noSchema, schema } = splitSchema(url);
  const { url: plain, timeoutMs } = splitConnectTimeout(noSchema);
  const options = ["-c synchronous_commit=on", "-c TimeZone=UTC"];
  if (schema) options.push(`-c search_path=${schema}`);
  return { connectionString: plain, options: options.join(" "), types, connectionTimeoutMillis: timeoutMs };
}

export function createPool(config: PgConfig): pg.Pool {
  const pool = new pg.Pool({ ...clientConfig(config.url), max: config.max ?? 10, idleTimeoutMillis: 30_000 });
  // An idle client that loses its connection (PostgreSQL restarted) is dropped by the pool; without a
  // listener the error would end the process.
  pool.on("error", () => undefined);
  // A client checked out of the pool has no error listener of the pool's: the connection lost under
  // it (PostgreSQL stopped, immediate mode) would emit an unhandled 'error' and end the process. The
  // statement in flight fails anyway (-> 503), and the pool drops the broken client on release.
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

const RETRY_CODES = new Set(["40001", "40P01"]);

/** True for errors that mean "PostgreSQL is not reachable now" rather than "this statement is wrong". */
export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === "string" ? e.code : "";
  if (code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03" || code === "53300") return true;
  // ENOENT: a unix socket (`?host=/dir`) whose server is down, which removes the socket file.
  if (["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "ENOTFOUND", "EAI_AGAIN", "ENOENT"].includes(code)) return true;
  const message = typeof e.message === "string" ? e.message : "";
  return /Connection terminated|connection timeout|Client has encountered a connection error|not queryable/i.test(message);
}

export function mapError(err: unknown): unknown {
  if (err instanceof ServiceError) return err;
  if (isConnectionError(err)) return unavailable(`the PostgreSQL store is unreachable: ${(err as Error).message}`, err);
  return err;
}

export type Queryable = pg.Pool | pg.PoolClient;

/** One statement; `name` makes it a prepared statement (parsed once per connection). */
export async function q<R extends pg.QueryResultRow = Record<string, unknown>>(
  db: Queryable,
  text: string,
  values: unknown[] = [],
  name?: string,
): Promise<R[]> {
  try {
    const res = await db.query<R>(name ? { name, text, values } : { text, values });
    return res.rows;
  } catch (err) {
    throw mapError(err);
  }
}

/** Runs `fn` in a transaction on one connection; retried (up to 5 times) on deadlock or serialization failure. */
export async function tx<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      throw mapError(err);
    }
    let broken: Error | undefined;
    try {
      await client.query("BEGIN");
      const out = await fn(client);
      await client.query("COMMIT");
      return out;
    } catch (err) {
      await client.query("ROLLBACK").catch((e: unknown) => {
        broken = e as Error;
      });
      const code = (err as { code?: string }).code ?? "";
      if (RETRY_CODES.has(code) && attempt < 5) continue;
      throw mapError(err);
    } finally {
      client.release(broken);
    }
  }
}

/**
 * PostgreSQL text and jsonb cannot hold U+0000 (SQLite can): it becomes U+FFFD, so that one block's
 * odd byte cannot fail the transaction of a whole batch.
 */
export const pgText = (s: string): string => (s.includes("\u0000") ? s.replaceAll("\u0000", "\ufffd") : s);

/** JSON text for a jsonb parameter, with U+0000 in strings replaced as in pgText. */
export const pgJson = (value: unknown): string => JSON.stringify(value, (_k, v: unknown) => (typeof v === "string" ? pgText(v) : v));
