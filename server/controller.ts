/**
 * The server's controller: owns start-up and shutdown of the store, the bus, every service and both
 * listeners, as one list of parts (protocol/lifecycle.ts): started in order, stopped in reverse,
 * each stop isolated. `init()` builds everything without listening (tests use `api.inject()`);
 * `start()` also listens; `stop()` answers held polls, drains requests, commits what was accepted,
 * closes the store and logs `stopped`.
 */
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import pino, { type Logger } from "pino";
import { LocalBus } from "./bus/local.js";
import { PgBus } from "./bus/postgres.js";
import type { Bus } from "./bus/types.js";
import { REST_PREFIX, buildApiApp, buildStreamApp } from "./http/app.js";
import { LISTEN_BACKLOG } from "./http/connection-guard.js";
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
import type { PartitionInterval } from "./store/postgres/partition-ranges.js";
import type { Store } from "./store/types.js";
import { StoreHealth } from "./services/store-health.js";
import type { OutboundPolicyOptions } from "./services/outbound-policy.js";
import { Lifecycle, type Part } from "../protocol/lifecycle.js";
import { listenUrl } from "../protocol/listen-url.js";

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

export class BlockkitServer {
  services!: Services;
  api!: FastifyInstance;
  stream!: FastifyInstance;
  private lifecycle: Lifecycle | null = null;
  private firstUser: FirstUser | null = null;
  private urls: StartedServer | null = null;
  private readonly log: Logger;

  constructor(readonly options: ServerOptions = {}) {
    this.log = options.logger ?? pino({ level: options.logLevel ?? "info", base: { name: "blockkit" } });
  }

  /** Builds the store, services and apps without listening. Returns the first user when it created one. */
  async init(): Promise<FirstUser | null> {
    await this.run(false);
    return this.firstUser;
  }

  /**
   * Builds and listens on both ports; the first user of an empty database is created only then,
   * so a start that fails (a port in use) leaves no account whose credentials nobody saw. A failed
   * start closes what it had opened (the store first of all) before it rejects.
   */
  async start(): Promise<StartedServer> {
    await this.run(true);
    return { ...(this.urls as StartedServer), firstUser: this.firstUser };
  }

  /**
   * Answers held polls, drains requests, commits what was accepted and closes the store, then logs
   * `stopped`. During a start, cancels it (start() rejects with StartCancelled). Each part is
   * stopped even when another one's stop threw; those errors come back together as a StopError.
   */
  stop(): Promise<void> {
    if (!this.lifecycle) this.lifecycle = new Lifecycle(this.log);
    return this.lifecycle.stop();
  }

  private run(listen: boolean): Promise<void> {
    if (this.lifecycle) return Promise.reject(new Error("BlockkitServer: init() or start() called twice, or after stop()"));
    this.lifecycle = new Lifecycle(this.log).add(...this.parts(listen));
    return this.lifecycle.start();
  }

  /**
   * The server's parts in start order; they stop in the reverse order: listeners keep accepting
   * until held polls were answered, the ingest batch commits before the store closes.
   */
  private parts(listen: boolean): Part[] {
    const o = this.options;
    const log = this.log;
    let store: Store;
    let bus: Bus;
    const s = (): Services => this.services;
    const parts: Part[] = [
      {
        name: "store",
        start: async () => {
          store =
            o.store ??
            (await openStore(o.db ?? `sqlite:${o.dataDir ?? "./data"}`, {
              retentionMs: o.retentionMs ?? null,
              partitionInterval: o.partitionInterval,
              onError: (err) => log.error({ err, module: "srv:store" }, "the ingest thread failed: block events are refused until restart"),
              warn: (message) => log.warn({ module: "srv:store" }, message),
            }));
        },
        stop: () => store.close(),
      },
      {
        name: "bus",
        start: async () => {
          if (!o.bus && store.kind === "postgres" && o.db !== undefined) {
            // Several instances on one database: the Bus goes through PostgreSQL (LISTEN/NOTIFY).
            const pgBus = new PgBus(o.db, (store as PostgresStore).pool, log.child({ module: "srv:bus" }));
            bus = pgBus;
            await pgBus.start();
          } else bus = o.bus ?? new LocalBus();
        },
        stop: () => bus.close(),
      },
      // Constructors only assign: nothing to stop here.
      { name: "services", start: () => void (this.services = this.wire(store, bus)) },
      { name: "auth", start: () => s().auth.start(this.options.revocationPollMs ?? 1000), stop: () => s().auth.stop() },
      { name: "rate limiter", start: () => s().rateLimiter.start(), stop: () => s().rateLimiter.stop() },
      // Loads the session key: before any request can arrive (nothing listens yet).
      { name: "accounts", start: () => s().accounts.start(), stop: () => s().accounts.stop() },
      { name: "ingest", start: () => s().ingest.start(), stop: () => s().ingest.stop() },
      {
        // Closing the apps closes the listeners: after every held request below was answered.
        name: "apps",
        start: async () => {
          this.stream = await buildStreamApp(this.services);
          this.api = await buildApiApp(this.services, this.stream);
          await Promise.all([this.api.ready(), this.stream.ready()]);
        },
        stop: () => Promise.all([this.api.close(), this.stream.close()]),
      },
      { name: "automation", start: () => s().automation.start(), stop: () => s().automation.stop() },
      { name: "live stream", start: () => s().stream.start(), stop: () => s().stream.stop() },
      { name: "activation", stop: () => s().activation.stop() },
      // Answers held polls first when stopping, so that closing the listeners does not wait for their holds.
      { name: "commands", start: () => s().commands.start(), stop: () => s().commands.stop() },
    ];
    if (listen) parts.push({ name: "listeners", start: () => this.listen() });
    parts.push({
      name: "first user",
      start: async () => {
        this.firstUser = await this.ensureFirstUser();
      },
    });
    return parts;
  }

  /** Every service, wired; nothing is started. */
  private wire(store: Store, bus: Bus): Services {
    const o = this.options;
    const log = this.log;
    const clock = o.clock ?? Date.now;
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
      ingest: new Ingest(store, log.child({ module: "srv:ingest" }), { keyRetentionMs: o.keyRetentionMs }),
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
        callbacks: { leaseMs: o.leaseMs, ...o.automation?.callbacks },
        rules: {
          shared: store.kind === "postgres",
          leaseMs: o.leaseMs,
          // Test only: the e2e lease tests kill an instance between a commit and its rules' evaluation.
          testHoldEvaluation: process.env.BLOCKKIT_TEST_HOLD_RULE_EVALUATION === "1",
          ...o.automation?.rules,
        },
      }),
    };
    const services = { ...withAutomation, metrics: new ServerMetrics(withAutomation) };
    core.ingest.onCommitted(events.onCommitted);
    services.automation.engine.onRun((userId, rid, ok, firedAt) => events.rule(userId, rid, ok, firedAt));
    return services;
  }

  /** Listens on both ports and records the URLs. */
  private async listen(): Promise<void> {
    const host = this.options.host ?? "127.0.0.1";
    const port = this.options.port ?? 8000;
    await this.api.listen({ host, port, backlog: LISTEN_BACKLOG });
    const apiPort = (this.api.server.address() as AddressInfo).port;
    const outbound = this.services.automation.outbound;
    outbound.setOwnPorts([apiPort]);
    const streamPort = this.options.streamPort ?? (port === 0 ? 0 : port + 1);
    await this.stream.listen({ host, port: streamPort, backlog: LISTEN_BACKLOG });
    const realStreamPort = (this.stream.server.address() as AddressInfo).port;
    outbound.setOwnPorts([apiPort, realStreamPort]);
    const authUrl = listenUrl("http", host, apiPort);
    const streamUrl = listenUrl("http", host, realStreamPort);
    Object.assign(this.services.settings, { baseUrl: `${authUrl}${REST_PREFIX}`, authUrl, streamUrl });
    this.services.limits.logOpenFiles();
    this.urls = { baseUrl: `${authUrl}${REST_PREFIX}`, authUrl, streamUrl, firstUser: null };
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
