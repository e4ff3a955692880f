/**
 * One way to open a store from a URL, used by the server and every command that touches the
 * database:
 *  - `sqlite:DIR` or a plain directory: the embedded store, `DIR/blockkit.db` (sqlite/);
 *  - `:memory:`: a throwaway embedded store (tests);
 *  - `postgres://…` or `postgresql://…`: PostgreSQL (postgres/), several instances on one database.
 * The command line also takes the URL from BLOCKKIT_DB (cli/options.ts).
 */
import { unavailable } from "../errors.js";
import { openSqliteStore } from "./sqlite/index.js";
import type { PartitionInterval } from "./postgres/partition-ranges.js";
import type { Store } from "./types.js";
import { parseStoreUrl } from "./url.js";

export { parseStoreUrl, type StoreLocation } from "./url.js";

export interface OpenStoreOptions {
  /** PostgreSQL: readings older than this are dropped (a partition at a time). */
  retentionMs?: number | null;
  /** PostgreSQL: the interval of the readings partitions (day, week or month); default the database's. */
  partitionInterval?: PartitionInterval;
  /** PostgreSQL: connections in the pool. */
  poolSize?: number;
  /** SQLite: commit block events on the ingest thread (default true for a file). */
  ingestThread?: boolean;
  /** Where the store reports a failure after it opened (the ingest thread's death). */
  onError?: (err: Error) => void;
  /** Create the store when missing (default true); account commands pass false unless asked. */
  create?: boolean;
  /**
   * "migrate" (default, the server): apply pending migrations. "current" (the one-shot commands):
   * change no schema, and refuse one that is behind or ahead of this build (schema.ts).
   */
  schema?: "migrate" | "current";
  /** Warnings while opening (file modes tightened). */
  warn?: (message: string) => void;
}

/** Opens the store at `url`; rejects (loudly) when it cannot, e.g. when the ingest thread does not start. */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  const where = parseStoreUrl(url);
  if (where.kind === "postgres") {
    const { openPostgresStore } = await import("./postgres/index.js");
    return openPostgresStore({ url: where.url, retentionMs: options.retentionMs, partitionInterval: options.partitionInterval,
      poolSize: options.poolSize,
      schema: options.schema,
      create: options.create,
    });
  }
  const store = openSqliteStore({ dataDir: where.dir, ingestThread: options.ingestThread, onError: options.onError, create: options.create, warn: options.warn, schema: options.schema });
  if (store.ingestThread) {
    try {
      await store.ingestThread.started;
    } catch (err) {
      await store.close().catch(() => undefined);
      throw unavailable(`the SQLite store's ingest thread could not start: ${(err as Error).message}`, err);
    }
  }
  return store;
}
