/**
 * What one client may hold of the server (connections, activation holds, time to send a request),
 * and the record of each time a limit bit: a counter per limit (read by /metrics) and a log line
 * per limit at most every `logEveryMs`, carrying how many times it bit since the last line.
 */
import type { Logger } from "pino";
import { type FileLimit, openFileLimit } from "../../protocol/open-files.js";
import { LIMIT_DEFAULTS, type LimitOptions } from "./limit-options.js";

export { LIMIT_DEFAULTS, type LimitOptions, RESERVED_FILES, connectionCap } from "./limit-options.js";

/** The limits that can bite, as counted (`blockkit_limit_hits_total{limit}`). */
export type LimitName =
  | "connections"
  /** At the total cap, the oldest connection not yet proven was reset to make room for a new one. */
  | "connections_evicted"
  | "connections_per_address"
  /** A request authenticated on a connection past its user's or its block's share (maxConnectionsPer*). */
  | "connections_per_user"
  | "connections_per_block"
  /** A connection from the machine itself admitted past the total cap, for /metrics and /healthz only. */
  | "connections_reserve"
  | "request_timeout"
  | "activation_holds"
  | "activation_holds_per_address"
  | "rate_limit"
  | "login"
  /** A callback, webhook or File Host connection refused by the outbound policy. */
  | "outbound";

/** One admitted connection, as the limits see it. */
interface Conn {
  readonly address: string;
  /** Resets the connection (at the total cap, while it is unproven). */
  readonly evict: () => void;
  /** The owner whose credential proved it (`u<user id>`, `b<node id>`, SCRAPERS); null while unproven. */
  owner: string | null;
  /** Admitted past the total cap for /metrics and /healthz only (metricsReserve). */
  readonly reserve: boolean;
}

/** The owner of connections proven by a scrape (proveScrape). */
const SCRAPERS = "metrics";

export class Limits {
  readonly options: LimitOptions;
  /** Times each limit bit since start. */
  readonly hits = new Map<LimitName, number>();
  private readonly lastLog = new Map<LimitName, { at: number; since: number }>();
  private readonly uncapped: ReadonlySet<string>;
  private readonly byAddress = new Map<string, number>();
  /** Every admitted connection, keyed by its socket. */
  private readonly conns = new Map<object, Conn>();
  /**
   * Open connections not proven (no request authenticated on them, no activation held on them),
   * oldest first (a Map keeps insertion order): the ones evicted at the total cap.
   */
  private readonly unproven = new Map<object, Conn>();
  /** Proven connections per owner (maxConnectionsPerUser, maxConnectionsPerBlock). */
  private readonly owners = new Map<string, number>();
  private open = 0;
  private reserved = 0;

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

  /** Connections open now, both listeners, the metrics reserve left out (metrics). */
  get openConnections(): number {
    return this.open;
  }

  /** Connections open now in the metrics reserve (metrics, tests). */
  get reserveConnections(): number {
    return this.reserved;
  }

  /** Whether the per-address caps apply to `address`. */
  capped(address: string): boolean {
    return !this.uncapped.has(address);
  }

  /** Open connections not yet proven (metrics, tests). */
  get unprovenConnections(): number {
    return this.unproven.size;
  }

  /** Open connections proven by one user's credentials (tests). */
  userConnections(userId: number): number {
    return this.owners.get(`u${userId}`) ?? 0;
  }

  /** Whether `key` was admitted past the total cap into the metrics reserve. */
  inReserve(key: object): boolean {
    return this.reserved > 0 && this.conns.get(key)?.reserve === true;
  }

  /**
   * A new connection from `address`: true when it may stay (then `release` it once closed). Over
   * the per-address cap it is refused. At the total cap the oldest open connection that is not
   * proven (`proveUser`, `proveBlock`, `holdActivation`) is evicted to make room: `evict` of that
   * connection is called, and must `release` it before it returns. When every open connection is
   * proven, a connection from the machine itself (`uncappedAddresses`) may still take one of the
   * `metricsReserve` places (`inReserve`: for /metrics and /healthz only); any other is refused. So
   * connections that never finish a request (a slow-body flood from many addresses, each under its
   * cap) cannot keep proven clients' new connections out until their timeouts: they make room for
   * them. The new connection is itself unproven, keyed by `key` (the socket).
   */
  admit(address: string, key: object, evict: () => void): boolean {
    const o = this.options;
    const n = this.byAddress.get(address) ?? 0;
    if (n >= o.maxConnectionsPerAddress && this.capped(address)) {
      this.bit("connections_per_address", { address, max: o.maxConnectionsPerAddress });
      return false;
    }
    let reserve = false;
    while (this.open >= o.maxConnections) {
      const oldest = this.unproven.entries().next();
      if (oldest.done) {
        if (!this.capped(address) && this.reserved < o.metricsReserve) {
          this.bit("connections_reserve", { address, max: o.maxConnections, reserve: o.metricsReserve });
          reserve = true;
          break;
        }
        this.bit("connections", { address, max: o.maxConnections });
        return false;
      }
      const [k, conn] = oldest.value;
      this.unproven.delete(k);
      const before = this.open;
      conn.evict();
      if (this.open >= before) throw new Error("limits: an evicted connection was not released");
      this.bit("connections_evicted", { address, max: o.maxConnections });
    }
    const conn: Conn = { address, evict, owner: null, reserve };
    this.conns.set(key, conn);
    this.byAddress.set(address, n + 1);
    if (reserve) this.reserved++;
    else {
      this.open++;
      this.unproven.set(key, conn);
    }
    return true;
  }

  /**
   * A request of user `userId` was authenticated on the connection `key`: true when the connection
   * may carry it (it is then proven, never evicted at the total cap, and counts in the user's share
   * until it closes or carries another owner's request); false when the user already holds
   * `maxConnectionsPerUser` other connections (refuse the request, close the connection).
   */
  proveUser(key: object, userId: number): boolean {
    return this.claim(key, `u${userId}`, this.options.maxConnectionsPerUser, "connections_per_user");
  }

  /**
   * The same for a block event, poll or upload of block `nodeId` (maxConnectionsPerBlock). `count`
   * false: a refusal is not counted (the fast ingest lane, whose refusals fastify answers and counts).
   */
  proveBlock(key: object, nodeId: string, count = true): boolean {
    return this.claim(key, `b${nodeId}`, this.options.maxConnectionsPerBlock, count ? "connections_per_block" : null);
  }

  /**
   * A scrape (GET /metrics, from the machine itself or with the metrics token) was read on the
   * connection `key`: the connection is kept at the total cap like an authenticated one, so a flood
   * of connections that never finish a request does not reset the operator's view of it (a
   * scrape was the first connection reset, and a kept-alive one was reset between scrapes). At most
   * `metricsReserve` connections are kept so; a scrape past that is still answered, on a connection
   * that stays evictable (no refusal, nothing counted). A connection already proven, or admitted into
   * the reserve (never evicted), is left as it is.
   */
  proveScrape(key: object): void {
    const conn = this.conns.get(key);
    if (conn === undefined || conn.owner !== null || conn.reserve) return;
    this.claim(key, SCRAPERS, this.options.metricsReserve, null);
  }

  /**
   * An activation request is held on the connection `key` (the block has no token yet): it is not
   * evicted at the total cap while held, as it would otherwise be first (bounded instead by
   * maxActivationHolds and maxActivationHoldsPerAddress). Returns the function that ends the hold.
   */
  holdActivation(key: object): () => void {
    const conn = this.unproven.get(key);
    if (conn === undefined) return () => undefined;
    this.unproven.delete(key);
    return () => {
      // Still open and still unproven: evictable again (as the youngest).
      if (this.conns.get(key) === conn && conn.owner === null) this.unproven.set(key, conn);
    };
  }

  private claim(key: object, owner: string, max: number, limit: LimitName | null): boolean {
    const conn = this.conns.get(key);
    // A request not on an admitted socket (fastify's inject in tests) is not counted.
    if (conn === undefined || conn.owner === owner) return true;
    const n = this.owners.get(owner) ?? 0;
    if (n >= max) {
      if (limit !== null) this.bit(limit, { address: conn.address, owner: owner.slice(1), max });
      return false;
    }
    this.owners.set(owner, n + 1);
    if (conn.owner === null) this.unproven.delete(key);
    else this.disown(conn.owner);
    conn.owner = owner;
    return true;
  }

  private disown(owner: string): void {
    countDown(this.owners, owner);
  }

  /** The connection `key`, admitted, closed (or evicted). Further calls do nothing. */
  release(key: object): void {
    const conn = this.conns.get(key);
    if (conn === undefined) return;
    this.conns.delete(key);
    this.unproven.delete(key);
    if (conn.owner !== null) this.disown(conn.owner);
    if (conn.reserve) this.reserved--;
    else this.open--;
    countDown(this.byAddress, conn.address);
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

/** One less of `key` in a map of counts; the key goes when none is left. */
function countDown(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left <= 0) counts.delete(key);
  else counts.set(key, left);
}
