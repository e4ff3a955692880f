/**
 * The automation features (issue 3) as one lifecycle part owned by the controller: sub-devices and
 * the actuators of service devices, callback delivery. It plugs into the core only through its hooks: the ingest's
 * commit listener, the command interceptor and the device JSON's sub-device view.
 */
import type { Dispatcher } from "undici";
import type { Services } from "../index.js";
import { ServiceActuators } from "./actuators.js";
import { CallbackDispatcher, type CallbackOptions } from "./callbacks.js";
import { SubDeviceService } from "./subdevices.js";

export interface AutomationOptions {
  smsUrl?: string | undefined;
  smtpUrl?: string | undefined;
  /** Limit of one outgoing call (webhook, SMS gateway), ms. Default 5000. */
  outgoingTimeoutMs?: number;
  /** undici dispatcher for outgoing calls (tests inject one); default the global one. */
  dispatcher?: Dispatcher | undefined;
  callbacks?: CallbackOptions;
}

export type CoreServices = Omit<Services, "automation">;

export class Automation {
  readonly subdevices: SubDeviceService;
  readonly actuators: ServiceActuators;
  readonly callbacks: CallbackDispatcher;

  constructor(core: CoreServices, options: AutomationOptions = {}) {
    const log = core.log.child({ module: "srv:automation" });
    this.subdevices = new SubDeviceService(core.store, core.devices, core.ingest, log, core.clock);
    this.actuators = new ServiceActuators(
      core.store,
      core.commands,
      log,
      { smsUrl: options.smsUrl, timeoutMs: options.outgoingTimeoutMs, dispatcher: options.dispatcher },
      core.clock,
    );
    this.callbacks = new CallbackDispatcher(core.store, core.log.child({ module: "srv:callbacks" }), options.callbacks);
    core.devices.setSubDeviceView(this.subdevices.view);
    core.commands.addInterceptor(this.actuators.intercept);
    core.ingest.onCommitted(this.subdevices.onCommitted);
    core.ingest.onCommitted(this.callbacks.onCommitted);
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {
    await this.callbacks.stop();
  }
}
