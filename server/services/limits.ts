/**
 * What one client may hold of the server (connections, activation holds, time to send a request),
 * and the record of each time a limit bit: a counter per limit (read by /metrics) and a log line
 * per limit at most every `logEveryMs`, carrying how many times it bit since the last line.
 */
import type { Logger } from "pino";
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
  maxActivationHolds: 10_000,
  maxActivationHoldsPerAddress: 64,
  logEveryMs: 10_000,
};

/** The limits that can bite, as counted (`blockkit_limit_hits_total{limit}`). */
export type LimitName =
  | "connections"
  /** At the total cap, the oldest connection not yet proven was reset to make room for a new one. */
  | "connections_evicted"
  | "connections_per_address"
  | "request_timeout"
  | "activation_holds"
  | "activation_holds_per_address"
  | "rate_limit"
  | "login"
  /** A callback, webhook or File Host connection refused by the outbound policy. */
  | "outbound";

export class Limits {
  readonly options: LimitOptions;
  /** Times each limit bit since start. */
  readonly hits = new Map<LimitName, number>();
  private readonly lastLog = new Map<LimitName, { at: number; since: number }>();
  private readonly uncapped: ReadonlySet<string>;
  private readonly byAddress = new Map<string, number>();
  /**
   * Open connections on which no request has been authenticated yet, oldest first (a Map keeps
   * insertion order), each with the function that resets it: the ones evicted at the total cap.
   */
  private readonly unproven = new Map<object, () => void>();
  private open = 0;

  constructor(
    options: Partial<LimitOptions>,
    private readonly log: Logger,
    private readonly clock: () => number = Date.now,
  ) {
    this.options = Object.freeze({ ...LIMIT_DEFAULTS, ...options });
    for (const [name, value] of Object.entries(this.options)) {
      if (name === "uncappedAddresses") continue;
      if (!(typeof value === "number" && Number.isFinite(value) && value >= 0)) {
        throw new TypeError(`limits.${name} must be a non-negative number, got ${String(value)}`);
      }
    }
    this.uncapped = new Set(this.options.uncappedAddresses);
  }

  /**
   * Logs the open-file limit the process runs with and the connection cap it gives, at start; a
   * `warn` when the soft limit is below the hard one (something kept Node from raising it).
   */
  logOpenFiles(limit: FileLimit | null = openFileLimit()): void {
    const max = this.options.maxConnections;
    if (limit === null) {
      this.log.info({ max_connections: max }, `open-file limit unknown; connections capped at ${max}`);
      return;
    }
    const text = (n: number): string => (Number.isFinite(n) ? String(n) : "unlimited");
    const detail = { open_files_soft: text(limit.soft), open_files_hard: text(limit.hard), max_connections: max };
    const line = `open files: limit ${text(limit.soft)} (hard ${text(limit.hard)}); connections capped at ${max}`;
    if (limit.soft < limit.hard) this.log.warn(detail, `${line}; the soft limit is below the hard one: raise it with \`ulimit -n ${text(limit.hard)}\``);
    else this.log.info(detail, line);
  }

  /** Connections open now, both listeners (metrics). */
  get openConnections(): number {
    return this.open;
  }

  /** Whether the per-address caps apply to `address`. */
  capped(address: string): boolean {
    return !this.uncapped.has(address);
  }

  /** Open connections not yet proven (metrics, tests). */
  get unprovenConnections(): number {
    return this.unproven.size;
  }

  /**
   * A new connection from `address`: true when it may stay (then `release` it once closed). Over
   * the per-address cap it is refused. At the total cap the oldest open connection on which no
   * request has been authenticated yet (`prove`) is evicted to make room: `evict` of that
   * connection is called, and must `release` it before it returns. Only when every open connection
   * is proven is the new one refused. So connections that never finish a request (a slow-body
   * flood from many addresses, each under its cap) cannot keep proven clients' new connections out
   * until their timeouts: they make room for them. The new connection is itself unproven, keyed by
   * `key` (the socket), until `prove(key)`.
   */
  admit(address: string, key: object, evict: () => void): boolean {
    const o = this.options;
    const n = this.byAddress.get(address) ?? 0;
    if (n >= o.maxConnectionsPerAddress && this.capped(address)) {
      this.bit("connections_per_address", { address, max: o.maxConnectionsPerAddress });
      return false;
    }
    while (this.open >= o.maxConnections) {
      const oldest = this.unproven.entries().next();
      if (oldest.done) {
        this.bit("connections", { address, max: o.maxConnections });
        return false;
      }
      const [k, reset] = oldest.value;
      this.unproven.delete(k);
      const before = this.open;
      reset();
      if (this.open >= before) throw new Error("limits: an evicted connection was not released");
      this.bit("connections_evicted", { address, max: o.maxConnections });
    }
    this.open++;
    this.byAddress.set(address, (this.byAddress.get(address) ?? 0) + 1);
    this.unproven.set(key, evict);
    return true;
  }

  /** A request on the connection `key` was authenticated: it is no longer evicted at the total cap. */
  prove(key: object): void {
    this.unproven.delete(key);
  }

  /** The connection `key` from `address`, admitted, closed (or evicted). Call once per admission. */
  release(address: string, key: object): void {
    this.unproven.delete(key);
    this.open--;
    const left = (this.byAddress.get(address) ?? 1) - 1;
    if (left <= 0) this.byAddress.delete(address);
    else this.byAddress.set(address, left);
  }

  /** Records that a limit bit; `detail` goes into the log line (an address, a count). */
  bit(limit: LimitName, detail: Record<string, unknown> = {}): void {
    this.hits.set(limit, (this.hits.get(limit) ?? 0) + 1);
    const now = this.clock();
    const last = this.lastLog.get(limit);
    if (last && now - last.at < this.options.logEveryMs) {
      last.since++;
      return;
    }
    this.log.warn({ limit, ...detail, times: (last?.since ?? 0) + 1 }, `limit reached: ${limit}`);
    this.lastLog.set(limit, { at: now, since: 0 });
  }
}
