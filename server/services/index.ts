/** The service container handed to every HTTP module. */
import type { Logger } from "pino";
import type { Bus } from "../bus/types.js";
import type { Store } from "../store/types.js";
import type { Activation } from "./activation.js";
import type { AuthService } from "./auth.js";
import type { Automation } from "./automation/index.js";
import type { CommandHub } from "./commands.js";
import type { DeviceService } from "./devices.js";
import type { HistoryService } from "./history.js";
import type { Ingest } from "./ingest.js";
import type { Accounts } from "./accounts/index.js";
import type { RateLimiter } from "./rate-limit.js";
import type { StoreHealth } from "./store-health.js";
import type { Limits } from "./limits.js";
import type { ServerMetrics } from "./metrics.js";
import type { StreamHub } from "./stream/hub.js";
import type { StreamPublisher } from "./stream/publisher.js";

export interface ServerSettings {
  /** Longest hold of the commands long-poll and of activation, ms. */
  pollHoldMs: number;
  /** Bearer token that opens GET /metrics to any client; unset: loopback clients only. */
  metricsToken?: string | undefined;
  /** Proxies whose X-Forwarded-For is believed (checked); empty: none. */
  trustProxy: readonly string[];
  /** Whether a connection's own address is one of trustProxy's (its requests carry the client in X-Forwarded-For). */
  fromTrustedProxy: (address: string) => boolean;
  /** The API's and the stream listener's public addresses behind a proxy (checked), when given. */
  publicUrl?: string | undefined;
  publicStreamUrl?: string | undefined;
  /** External addresses, as printed at start. */
  baseUrl: string;
  authUrl: string;
  streamUrl: string;
}

export interface Services {
  settings: ServerSettings;
  log: Logger;
  clock: () => number;
  store: Store;
  bus: Bus;
  auth: AuthService;
  /** Sessions, login, CSRF key and OAuth (the settings pages). */
  accounts: Accounts;
  rateLimiter: RateLimiter;
  /** Connection, timeout and hold limits, and the count of each time one bit. */
  limits: Limits;
  /** Prometheus metrics (GET /metrics). */
  metrics: ServerMetrics;
  ingest: Ingest;
  commands: CommandHub;
  activation: Activation;
  devices: DeviceService;
  history: HistoryService;
  /** Publishes the live stream's events on the bus (after commit, for readings). */
  events: StreamPublisher;
  /** The live stream's sockets on this process. */
  stream: StreamHub;
  /** Sub-devices, callbacks delivery, rules and the camera. */
  automation: Automation;
  /** Whether the store writes, for /healthz (store-health.ts). */
  storeHealth: StoreHealth;
}
