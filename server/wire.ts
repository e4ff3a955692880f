/**
 * The server's services wired together (controller.ts builds them as its part "services"): which
 * service gets the store, the bus, the clock, the limits and which other services, and the options
 * each takes from ServerOptions. Constructors only assign, so nothing here starts or needs a stop.
 * Apart from the controller, which owns the order in which the parts start and stop.
 */
import { join } from "node:path";
import type { Logger } from "pino";
import type { Bus } from "./bus/types.js";
import { proxyMatcher, trustedProxies } from "./services/networks.js";
import { publicUrl } from "./services/public-url.js";
import type { ServerOptions } from "./server-options.js";
import { Accounts } from "./services/accounts/index.js";
import { Activation } from "./services/activation.js";
import { AuthService } from "./services/auth.js";
import { Automation } from "./services/automation/index.js";
import { CommandHub } from "./services/commands.js";
import { DeviceService } from "./services/devices.js";
import { HistoryService } from "./services/history.js";
import type { Services } from "./services/index.js";
import { Ingest } from "./services/ingest.js";
import { Limits } from "./services/limits.js";
import { ServerMetrics } from "./services/metrics.js";
import { RateLimiter } from "./services/rate-limit.js";
import { StoreHealth } from "./services/store-health.js";
import { StreamHub } from "./services/stream/hub.js";
import { StreamPublisher } from "./services/stream/publisher.js";
import type { Store } from "./store/types.js";

/** Every service, wired; nothing is started. */
export function wireServices(o: ServerOptions, log: Logger, store: Store, bus: Bus): Services {
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
  const trustProxy = trustProxyOption(o.trustProxy);
  const core = {
    settings: {
      pollHoldMs: holdMs,
      metricsToken: o.metricsToken,
      trustProxy,
      fromTrustedProxy: proxyMatcher(trustProxy),
      publicUrl: publicUrlOption("publicUrl", o.publicUrl),
      publicStreamUrl: publicUrlOption("publicStreamUrl", o.publicStreamUrl),
      baseUrl: "",
      authUrl: "",
      streamUrl: "",
    },
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

/** ServerOptions.trustProxy, checked: a TypeError naming the option and the item at fault (also the controller's constructor). */
export function trustProxyOption(list: readonly string[] | undefined): readonly string[] {
  try {
    return Object.freeze(trustedProxies(list ?? []));
  } catch (err) {
    throw new TypeError(`trustProxy: ${(err as Error).message}`);
  }
}

/** ServerOptions.publicUrl and publicStreamUrl, checked: a TypeError naming the option (also the controller's constructor). */
export function publicUrlOption(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    return publicUrl(value);
  } catch (err) {
    throw new TypeError(`${name}: ${(err as Error).message}`);
  }
}
