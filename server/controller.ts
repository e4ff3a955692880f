/**
 * The server's controller: owns start-up and shutdown of the store, the bus, every service and both
 * listeners. `init()` builds everything without listening (tests use `api.inject()`); `start()`
 * also listens; `stop()` answers held polls, drains requests, commits what was accepted and closes
 * the store.
 */
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import pino, { type Logger } from "pino";
import { LocalBus } from "./bus/local.js";
import { PgBus } from "./bus/postgres.js";
import type { Bus } from "./bus/types.js";
import { REST_PREFIX, buildApiApp, buildStreamApp } from "./http/app.js";
import { Activation } from "./services/activation.js";
import { AuthService } from "./services/auth.js";
import { Automation, type AutomationOptions } from "./services/automation/index.js";
import { CommandHub } from "./services/commands.js";
import { DeviceService } from "./services/devices.js";
import { HistoryService } from "./services/history.js";
import type { Services } from "./services/index.js";
import { Ingest } from "./services/ingest.js";
import { Accounts, type LoginLimitOptions } from "./services/accounts/index.js";
import { RateLimiter } from "./services/rate-limit.js";
import { type LimitOptions, Limits } from "./services/limits.js";
import { ServerMetrics } from "./services/metrics.js";
import { newToken } from "./services/secrets.js";
import { openStore } from "./store/index.js";
import { StreamHub, type StreamHubOptions } from "./services/stream/hub.js";
import { StreamPublisher } from "./services/stream/publisher.js";
import type { PostgresStore } from "./store/postgres/index.js";
import type { Store } from "./store/types.js";
import { StoreHealth } from "./services/store-health.js";
import type { OutboundPolicyOptions } from "./services/outbound-policy.js";

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
  /** Bearer token that opens GET /metrics to any client. Default: none, loopback clients only. */
  metricsToken?: string;
  /** Connections, request timeouts and activation holds (docs/operations.md "Limits"). */
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

export class BlockkitServer {
  services!: Services;
  api!: FastifyInstance;
  stream!: FastifyInstance;
  private initialised = false;
  private stopping: Promise<void> | null = null;

  constructor(readonly options: ServerOptions = {}) {}

  /** Builds the store, services and apps without listening. Returns the first user when it created one. */
  async init(): Promise<FirstUser | null> {
    await this.build();
    return this.ensureFirstUser();
  }

  /** The store, services and apps, without the first user. */
  private async build(): Promise<void> {
    if (this.initialised) throw new Error("BlockkitServer.init() called twice");
    this.initialised = true;
    const o = this.options;
    const log = o.logger ?? pino({ level: o.logLevel ?? "info", base: { name: "blockkit" } });
    const clock = o.clock ?? Date.now;
    const store =
      o.store ??
      (await openStore(o.db ?? `sqlite:${o.dataDir ?? "./data"}`, {
        retentionMs: o.retentionMs ?? null,
        onError: (err) => log.error({ err, module: "srv:store" }, "the ingest thread failed: block events are refused until restart"),
        warn: (message) => log.warn({ module: "srv:store" }, message),
      }));
    let bus = o.bus;
    if (!bus && store.kind === "postgres" && o.db !== undefined) {
      // Several instances on one database: the Bus goes through PostgreSQL (LISTEN/NOTIFY).
      const pgBus = new PgBus(o.db, (store as PostgresStore).pool, log.child({ module: "srv:bus" }));
      try {
        await pgBus.start();
      } catch (err) {
        await store.close();
        throw err;
      }
      bus = pgBus;
    }
    bus ??= new LocalBus();
    const holdMs = (o.pollHoldSeconds ?? 30) * 1000;
    const auth = new AuthService(store, clock, bus);
    const limits = new Limits(o.limits ?? {}, log.child({ module: "srv:limits" }), clock);
    const rateLimiter = new RateLimiter(
      { perSecond: o.rateLimitPerSecond ?? 1000, burst: 2 * (o.rateLimitPerSecond ?? 1000) },
      clock,
      () => limits.bit("rate_limit"),
    );
    const commands = new CommandHub(
      store,
      bus,
      log.child({ module: "srv:commands" }),
      { holdMs, ttlMs: (o.commandTtlSeconds ?? 60) * 1000 },
      clock,
    );
    const events = new StreamPublisher(bus);
    const core = {
      settings: { pollHoldMs: holdMs, metricsToken: o.metricsToken, baseUrl: "", authUrl: "", streamUrl: "" },
      log,
      clock,
      store,
      bus,
      auth,
      accounts: new Accounts(store, auth, log.child({ module: "srv:accounts" }), clock, o.loginLimit, limits),
      rateLimiter,
      limits,
      ingest: new Ingest(store, log.child({ module: "srv:ingest" })),
      commands,
      activation: new Activation(store, bus, auth, log.child({ module: "srv:activation" }), { holdMs, awaitMs: 60_000, shared: store.kind === "postgres" }, limits, clock, events),
      devices: new DeviceService(store, commands, events),
      events,
      stream: new StreamHub(bus, log.child({ module: "srv:stream" }), o.stream),
      history: new HistoryService(store, clock),
      storeHealth: new StoreHealth(clock),
    };
    const withAutomation = {
      ...core,
      automation: new Automation(core, {
        smsUrl: o.smsUrl,
        smtpUrl: o.smtpUrl,
        filesDir: join(o.dataDir ?? "./data", "files"),
        outbound: o.outbound,
        ...o.automation,
        rules: { shared: store.kind === "postgres", ...o.automation?.rules },
      }),
    };
    this.services = { ...withAutomation, metrics: new ServerMetrics(withAutomation) };
    core.ingest.onCommitted(events.onCommitted);
    this.services.automation.engine.onRun((userId, rid, ok, firedAt) => events.rule(userId, rid, ok, firedAt));
    this.stream = await buildStreamApp(this.services);
    this.api = await buildApiApp(this.services, this.stream);
    await Promise.all([this.api.ready(), this.stream.ready()]);
    rateLimiter.start();
    auth.start();
    // Loads the session key: before any request can arrive (nothing listens yet).
    await this.services.accounts.start();
    this.services.ingest.start();
    this.services.stream.start();
    commands.start();
    await this.services.automation.start();
  }

  /**
   * Builds and listens on both ports; the first user of an empty database is created only then,
   * so a start that fails (a port in use) leaves no account whose credentials nobody saw.
   */
  async start(): Promise<StartedServer> {
    await this.build();
    const host = this.options.host ?? "127.0.0.1";
    const port = this.options.port ?? 8000;
    await this.api.listen({ host, port });
    const apiPort = (this.api.server.address() as AddressInfo).port;
    const outbound = this.services.automation.outbound;
    outbound.setOwnPorts([apiPort]);
    const streamPort = this.options.streamPort ?? (port === 0 ? 0 : port + 1);
    await this.stream.listen({ host, port: streamPort });
    const realStreamPort = (this.stream.server.address() as AddressInfo).port;
    outbound.setOwnPorts([apiPort, realStreamPort]);
    const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
    const authUrl = `http://${shown.includes(":") ? `[${shown}]` : shown}:${apiPort}`;
    const streamUrl = `http://${shown.includes(":") ? `[${shown}]` : shown}:${realStreamPort}`;
    Object.assign(this.services.settings, { baseUrl: `${authUrl}${REST_PREFIX}`, authUrl, streamUrl });
    this.services.limits.logOpenFiles();
    const firstUser = await this.ensureFirstUser();
    return { baseUrl: `${authUrl}${REST_PREFIX}`, authUrl, streamUrl, firstUser };
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    if (!this.initialised) return;
    const s = this.services;
    // Answer held polls first so that closing the listeners does not wait for their holds.
    s.commands.stop();
    s.activation.stop();
    s.stream.stop();
    await s.automation.stop();
    await Promise.all([this.api.close(), this.stream.close()]);
    await s.ingest.stop();
    s.rateLimiter.stop();
    s.accounts.stop();
    s.auth.stop();
    await s.bus.close();
    await s.store.close();
  }

  private async ensureFirstUser(): Promise<FirstUser | null> {
    const { store, auth } = this.services;
    if ((await store.users.count()) > 0) return null;
    const password = newToken().slice(0, 16);
    try {
      const { token } = await auth.createUser("admin", { password, token: this.options.adminToken });
      return { name: "admin", token, password };
    } catch (err) {
      // Another instance on the same database created the first user meanwhile.
      if ((await store.users.count()) > 0) return null;
      throw err;
    }
  }
}
