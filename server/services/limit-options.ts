/** The options of services/limits.ts: what one client may hold of the server, and their defaults. */
import { type FileLimit, openFileLimit } from "../../protocol/open-files.js";

export interface LimitOptions {
  /**
   * Open connections, both listeners and all addresses together (held long-polls count). Default:
   * the process's open-file limit less 512 (kept for the store, callbacks and logs), so that raising
   * the limit (LimitNOFILE=, `ulimit -n`) raises the cap with it; 16,384 where the limit is unknown.
   */
  maxConnections: number;
  /** Open connections from one address (both listeners). Default 256. */
  maxConnectionsPerAddress: number;
  /**
   * Addresses the per-address caps (connections, activation holds) do not apply to: the machine's
   * own clients (a simulator, a gateway on the same host). Default 127.0.0.1 and ::1.
   */
  uncappedAddresses: readonly string[];
  /** Time for a request's headers to arrive (also: a connection's first request), ms. Default 10,000. */
  headersTimeoutMs: number;
  /** Time for a whole request (headers and body) to arrive on the API listener, ms. Default 30,000. */
  requestTimeoutMs: number;
  /** The same on the stream listener (snapshot uploads of up to 10 MiB), ms. Default 120,000. */
  uploadTimeoutMs: number;
  /**
   * Open connections proven by one user's credentials (personal token, OAuth tokens and browser
   * sessions together): a request authenticated on a connection over it is answered 429 and the
   * connection closed. Default 256.
   */
  maxConnectionsPerUser: number;
  /**
   * Open connections proven by one block (its block token, or the virtual block token on its node
   * id): the same. A block holds one long-poll and a few connections for readings and snapshots.
   * Per block, not per owner: one user's fleet of thousands of blocks holds a poll each. Default 32.
   */
  maxConnectionsPerBlock: number;
  /**
   * Connections from `uncappedAddresses` (the machine itself) admitted past `maxConnections` when
   * every open connection is proven, for GET /metrics and GET /healthz only: the operator can see
   * why the server is full exactly when it is. Any other request on one is answered 503. Also how
   * many connections that carried a scrape are kept at the total cap (Limits.proveScrape). Default 8.
   */
  metricsReserve: number;
  /** Activation requests held at once, all addresses together. Default 10,000. */
  maxActivationHolds: number;
  /** Activation requests held at once from one address. Default 64. */
  maxActivationHoldsPerAddress: number;
  /** Shortest interval between two log lines about one limit, ms. Default 10,000. */
  logEveryMs: number;
}

/** Descriptors kept out of the connection cap: the store, outbound callbacks, logs, the listeners. */
export const RESERVED_FILES = 512;

/** The default connection cap for an open-file limit: the limit less RESERVED_FILES, at least 64. */
export function connectionCap(limit: FileLimit | null): number {
  const soft = limit?.soft ?? Number.NaN;
  if (!Number.isFinite(soft)) return 16_384;
  return Math.max(64, soft - RESERVED_FILES);
}

export const LIMIT_DEFAULTS: LimitOptions = {
  // Node raised the soft limit to the hard one as the process started (protocol/open-files.ts).
  maxConnections: connectionCap(openFileLimit()),
  maxConnectionsPerAddress: 256,
  uncappedAddresses: ["127.0.0.1", "::1", "::ffff:127.0.0.1"],
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  uploadTimeoutMs: 120_000,
  maxConnectionsPerUser: 256,
  maxConnectionsPerBlock: 32,
  metricsReserve: 8,
  maxActivationHolds: 10_000,
  maxActivationHoldsPerAddress: 64,
  logEveryMs: 10_000,
};
