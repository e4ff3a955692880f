/**
 * What the server is given (ServerOptions: the command line's and the tests' options) and what a
 * start returns. Apart from controller.ts, which owns start-up and shutdown, so that the options
 * read on their own; importers take them from controller.ts, which re-exports them.
 */
import type { Logger } from "pino";
import type { Bus } from "./bus/types.js";
import type { AutomationOptions } from "./services/automation/index.js";
import type { LoginLimitOptions } from "./services/accounts/index.js";
import type { LimitOptions } from "./services/limits.js";
import type { OutboundPolicyOptions } from "./services/outbound-policy.js";
import type { StreamHubOptions } from "./services/stream/hub.js";
import type { PartitionInterval } from "./store/postgres/partition-ranges.js";
import type { Store } from "./store/types.js";

export interface ServerOptions {
  host?: string;
  /** API port. Default 8000. 0 picks a free one (tests). */
  port?: number;
  /** Stream (camera) port. Default port + 1; 0 picks a free one. */
  streamPort?: number;
  /** Directory of the server's files (and of the SQLite store when `db` is not given). Default ./data. */
  dataDir?: string;
  /** Store URL (server/store/index.ts). Default `sqlite:` + dataDir. */
  db?: string;
  /** PostgreSQL: readings older than this (ms) are dropped, a month's partition at a time. */
  retentionMs?: number;
  /** PostgreSQL: the readings partitions' interval; default the database's (month for a new one). */
  partitionInterval?: PartitionInterval;
  /** How long idempotency keys are remembered, ms (at least 1 h). Default 7 days. */
  keyRetentionMs?: number;
  /**
   * Several instances (PostgreSQL): how long an instance's lease on a callback delivery or a rule
   * run lasts unrenewed, ms, i.e. how soon another instance takes over the work of one that died.
   * Default 10 000.
   */
  leaseMs?: number;
  /** A ready store (tests); overrides db. */
  store?: Store;
  bus?: Bus;
  /** Personal access token of the first user on an empty database (known value for scripts). */
  adminToken?: string;
  smtpUrl?: string;
  smsUrl?: string;
  /** Login attempts per client address and per user name. Default 10 at once, one more every 30 s. */
  loginLimit?: LoginLimitOptions;
  /** Hold of the commands long-poll and activation, seconds. Default 30. */
  pollHoldSeconds?: number;
  /** Command time to live, seconds. Default 60. */
  commandTtlSeconds?: number;
  /** Per-credential rate limit, requests per second (0 = off). Default 1000, burst twice that. */
  rateLimitPerSecond?: number;
  /**
   * How often the token cache reads the store's log of deleted tokens, ms (SQLite: a token revoked
   * by another process, such as `blockkit users token`, is refused within this time). 0: never
   * (such revocations take effect at restart). Default 1000.
   */
  revocationPollMs?: number;
  /** Bearer token that opens GET /metrics to any client. Default: none, loopback clients only. */
  metricsToken?: string;
  /**
   * Proxies (addresses or CIDRs, services/networks.ts trustedProxies) whose X-Forwarded-For gives
   * request.ip: the login limit, /metrics' loopback check and the activation listing then see the
   * client behind the proxy. The connection caps still see the proxy. Default: none.
   */
  trustProxy?: readonly string[];
  /**
   * The API's public address behind a proxy (e.g. https://hub.example): the origin, besides the
   * printed auth_url's, whose pages (the reference at /docs) may call the camera operations on the
   * stream listener (CORS). Default: none.
   */
  publicUrl?: string;
  /**
   * The stream listener's public address behind a proxy (e.g. https://hub.example:8443): the
   * server of the camera operations in the reference at /docs, and the origin its page may connect
   * to. Default: the printed stream_url.
   */
  publicStreamUrl?: string;
  /** Connections, request timeouts and activation holds (docs/operations-limits.md "Limits"). */
  limits?: Partial<LimitOptions>;
  /** Caps and timers of the live stream (sockets per user, ping interval, send buffer). */
  stream?: StreamHubOptions;
  /**
   * Networks callbacks, webhook actuators and File Host targets may reach (allow/deny lists of
   * CIDRs, services/outbound-policy.ts). Default: anywhere but link-local and the server's own listeners.
   */
  outbound?: OutboundPolicyOptions;
  /** Tuning of sub-devices, callbacks, rules and the camera (timeouts, retries); defaults suit production. */
  automation?: AutomationOptions;
  logger?: Logger;
  logLevel?: string;
  clock?: () => number;
}

export interface FirstUser {
  name: string;
  token: string;
  password: string;
}

export interface StartedServer {
  baseUrl: string;
  authUrl: string;
  streamUrl: string;
  firstUser: FirstUser | null;
}
