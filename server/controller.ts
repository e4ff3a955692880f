/**
 * The server's controller: owns start-up and shutdown of the store, the bus, every service and both
 * listeners, as one list of parts (protocol/lifecycle.ts): started in order, stopped in reverse,
 * each stop isolated. `init()` builds everything without listening (tests use `api.inject()`);
 * `start()` also listens; `stop()` answers held polls, drains requests, commits what was accepted,
 * closes the store and logs `stopped`.
 */
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import pino, { type Logger } from "pino";
import { LocalBus } from "./bus/local.js";
import { PgBus } from "./bus/postgres.js";
import type { Bus } from "./bus/types.js";
import { REST_PREFIX, buildApiApp, buildStreamApp } from "./http/app.js";
import { LISTEN_BACKLOG } from "./http/connection-guard.js";
import type { FirstUser, ServerOptions, StartedServer } from "./server-options.js";
import type { Services } from "./services/index.js";
import { newToken } from "./services/secrets.js";
import { openStore } from "./store/index.js";
import type { PostgresStore } from "./store/postgres/index.js";
import type { Store } from "./store/types.js";
import { publicUrlOption, trustProxyOption, wireServices } from "./wire.js";
import { trustsLoopback } from "./services/networks.js";
import { Lifecycle, type Part } from "../protocol/lifecycle.js";
import { listenUrl } from "../protocol/listen-url.js";

// What the server is given and what a start returns are in server-options.ts; importers take them from here.
export type { FirstUser, ServerOptions, StartedServer } from "./server-options.js";

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
    trustProxyOption(options.trustProxy);
    publicUrlOption("publicUrl", options.publicUrl);
    publicUrlOption("publicStreamUrl", options.publicStreamUrl);
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
      { name: "services", start: () => void (this.services = wireServices(this.options, this.log, store, bus)) },
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
    this.logLoopbackProxy();
    this.urls = { baseUrl: `${authUrl}${REST_PREFIX}`, authUrl, streamUrl, firstUser: null };
  }

  /**
   * With a loopback proxy trusted and no metrics token, a scrape from this machine without
   * X-Forwarded-For is refused (server/http/client-address.ts): said once at start, so that an
   * operator whose local Prometheus gets 403 knows why.
   */
  private logLoopbackProxy(): void {
    const { trustProxy, metricsToken } = this.services.settings;
    if (metricsToken !== undefined || !trustsLoopback(trustProxy)) return;
    this.log.warn(
      { module: "srv:http", trust_proxy: trustProxy.join(",") },
      "--trust-proxy trusts loopback and no --metrics-token is set: GET /metrics is refused to requests from this machine without " +
        "X-Forwarded-For (they may be the proxy's, carrying an outside client); give Prometheus a --metrics-token",
    );
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
