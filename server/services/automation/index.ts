/**
 * The automation features as one lifecycle part owned by the controller: sub-devices and
 * the actuators of service devices, callback delivery, the rule engine and the camera. It plugs
 * into the core only through its hooks: the ingest's commit listener, the command interceptor and
 * the device JSON's sub-device view.
 */
import type { Dispatcher } from "undici";
import type { Services } from "../index.js";
import { OutboundPolicy, type OutboundPolicyOptions } from "../outbound-policy.js";
import { ServiceActuators } from "./actuators.js";
import { CallbackDispatcher, type CallbackOptions } from "./callbacks.js";
import { type CameraOptions, CameraService } from "./camera.js";
import { FileHost } from "./file-host.js";
import { Mailer } from "./mailer.js";
import { RuleEngine, type RuleEngineOptions } from "./rules/engine.js";
import type { ActionDeps } from "./rules/handlers/types.js";
import { RuleService } from "./rules/service.js";
import { SubDeviceService } from "./subdevices.js";

export interface AutomationOptions {
  smsUrl?: string | undefined;
  smtpUrl?: string | undefined;
  /** Sender of sendEmail. Default `blockkit <blockkit@localhost>`. */
  mailFrom?: string | undefined;
  /** Where File Host devices with a directory target write (`<dir>/<user id>/<target>/`). Default ./data/files. */
  filesDir?: string | undefined;
  /** Limit of one outgoing call (webhook, SMS gateway, file host PUT), ms. Default 5000. */
  outgoingTimeoutMs?: number;
  /**
   * undici dispatcher for outgoing calls (tests inject one; it bypasses the outbound policy).
   * Default: webhook actuators and File Host PUTs through the outbound policy, the SMS gateway
   * (the operator's choice) through undici's global dispatcher.
   */
  dispatcher?: Dispatcher | undefined;
  /** Networks callbacks, webhook actuators and File Host targets may reach (outbound-policy.ts). */
  outbound?: OutboundPolicyOptions;
  callbacks?: CallbackOptions;
  camera?: CameraOptions;
  rules?: RuleEngineOptions;
}

export type CoreServices = Omit<Services, "automation" | "metrics">;

export class Automation {
  readonly subdevices: SubDeviceService;
  readonly actuators: ServiceActuators;
  readonly callbacks: CallbackDispatcher;
  readonly camera: CameraService;
  readonly mailer: Mailer;
  readonly fileHost: FileHost;
  readonly engine: RuleEngine;
  readonly rules: RuleService;
  /** Where callbacks, webhook actuators and File Host PUTs may connect; the controller tells it its own ports. */
  readonly outbound: OutboundPolicy;
  private readonly outboundAgent: Dispatcher | undefined;

  constructor(core: CoreServices, options: AutomationOptions = {}) {
    const log = core.log.child({ module: "srv:automation" });
    const timeoutMs = options.outgoingTimeoutMs ?? 5000;
    // The session key signs webhook actuator calls (webhook-secret.ts); read when used, after start.
    const key = (): Buffer => core.accounts.key;
    this.outbound = new OutboundPolicy(options.outbound, undefined, (why) => core.limits.bit("outbound", { why }));
    // One pool for webhook actuators and File Host PUTs (callbacks keep their own, larger one).
    this.outboundAgent = options.dispatcher ? undefined : this.outbound.agent({ connectTimeoutMs: timeoutMs });
    const dispatcher = options.dispatcher ?? this.outboundAgent;
    this.subdevices = new SubDeviceService(core.store, core.devices, core.ingest, log, core.clock, key);
    this.actuators = new ServiceActuators(
      core.store,
      core.commands,
      log,
      { smsUrl: options.smsUrl, timeoutMs, dispatcher, smsDispatcher: options.dispatcher, key },
      core.clock,
    );
    this.callbacks = new CallbackDispatcher(core.store, core.log.child({ module: "srv:callbacks" }), { policy: this.outbound, ...options.callbacks });
    this.camera = new CameraService(core.store, core.bus, core.auth, core.devices, core.log.child({ module: "srv:camera" }), options.camera, core.clock);
    this.mailer = new Mailer({ smtpUrl: options.smtpUrl, from: options.mailFrom });
    this.fileHost = new FileHost(options.filesDir ?? "./data/files", { timeoutMs, dispatcher }, log);
    const deps: ActionDeps = {
      sendCommand: async (userId, guid, da) => core.devices.actuate(await core.devices.owned(userId, guid), da),
      snapshot: (userId, guid, signal) => this.camera.snapshot(userId, guid, signal),
      sendMail: (mail) => this.mailer.send(mail),
      storeFile: (host, name, snap, signal) => this.fileHost.store(host, name, snap, signal),
      device: (userId, guid) => core.devices.owned(userId, guid),
    };
    this.engine = new RuleEngine(core.store, core.bus, deps, core.log.child({ module: "srv:rules" }), options.rules, core.clock);
    this.rules = new RuleService(core.store, this.engine, core.clock, options.rules?.maxRulesPerUser);
    core.devices.setSubDeviceView(this.subdevices.view);
    core.commands.addInterceptor(this.actuators.intercept);
    core.ingest.onCommitted(this.subdevices.onCommitted);
    core.ingest.onCommitted(this.callbacks.onCommitted);
    core.ingest.onCommitted(this.engine.onCommitted);
    // Durable evaluation (PostgreSQL): watched readings go to the store's evaluation outbox with their commit.
    const evaluation = this.engine.evaluation;
    if (evaluation) core.ingest.evaluateWith(evaluation);
  }

  async start(): Promise<void> {
    await this.engine.start();
    this.callbacks.start();
  }

  async stop(): Promise<void> {
    this.camera.stop();
    await this.engine.stop();
    await this.callbacks.stop();
    this.mailer.close();
    await this.outboundAgent?.close();
  }
}
