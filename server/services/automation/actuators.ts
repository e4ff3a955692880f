/**
 * Commands that sub-devices and service devices take (installed with CommandHub.addInterceptor):
 * - to an rf433 device: DA = an rf actuator's id sends its code to the parent as a command; DA = a
 *   code of an rf actuator counts an actuation and is queued for the block as usual;
 * - to the Webhooks device: DA = a webhook actuator's data or id calls its `url` (POST, JSON);
 * - to the SMS device: DA = the text, sent to every sms actuator's number through the gateway of
 *   `--sms-url` (POST `{to, body}`); `<id>:<text>` sends to that one sub-device only;
 * - to the File Host and Email devices: refused (they take rule actions, not commands).
 */
import type { Logger } from "pino";
import type { Dispatcher } from "undici";
import { SUBDEVICE_ID_RE } from "../../../protocol/automation.js";
import { D } from "../../../protocol/device-types.js";
import { badRequest, unavailable } from "../../errors.js";
import type { DeviceRow, Store, SubDeviceRow } from "../../store/types.js";
import type { CommandHub } from "../commands.js";
import { isServiceNode } from "../service-devices.js";
import { randomUUID } from "node:crypto";
import { DELIVERY_HEADER, SIGNATURE_HEADER } from "../../../protocol/automation.js";
import { signature } from "./callback-sender.js";
import { OutgoingError, postJson, redactTarget, send } from "./http-out.js";
import { webhookSecret } from "./webhook-secret.js";
import { CAUSE_HEADER, currentCause, formatCause } from "./rules/cause.js";

export interface ActuatorOptions {
  /** SMS gateway taking POST `{to, body}`; unset: sms actuations fail with a clear error. */
  smsUrl?: string | undefined;
  /** Limit of one webhook or SMS gateway call, ms. Default 5000. */
  timeoutMs?: number;
  /** Webhook actuator calls (users' URLs: through the outbound policy). */
  dispatcher?: Dispatcher | undefined;
  /** SMS gateway calls (the operator's URL); default undici's global dispatcher. */
  smsDispatcher?: Dispatcher | undefined;
  /** The session key, from which each webhook actuator's signing secret is derived (webhook-secret.ts). */
  key?: () => Buffer;
}

export class ServiceActuators {
  private readonly timeoutMs: number;

  constructor(
    private readonly store: Store,
    private readonly commands: CommandHub,
    private readonly log: Logger,
    private readonly options: ActuatorOptions = {},
    private readonly clock: () => number = Date.now,
  ) {
    this.timeoutMs = options.timeoutMs ?? 5000;
  }

  readonly intercept = async (device: DeviceRow, da: string): Promise<boolean> => {
    if (device.v !== 0) return false;
    if (device.d === D.rf433) return this.rf(device, da);
    if (!isServiceNode(device.node_id)) return false;
    switch (device.d) {
      case D.webhook:
        await this.webhook(device, da);
        return true;
      case D.sms:
        await this.sms(device, da);
        return true;
      case D.filehost:
        throw badRequest("the File Host device takes files from the sendToFileHost rule action, not commands");
      case D.email:
        throw badRequest("the Email device sends mail from the sendEmail rule action, not commands");
      default:
        return false;
    }
  };

  private async rf(device: DeviceRow, da: string): Promise<boolean> {
    const subs = await this.store.subdevices.match(device.id, "rf", "actuator", da);
    const byId = subs.find((s) => s.sid === da);
    if (byId) {
      // Re-enters this interceptor with the code, which counts the actuation and queues it.
      await this.commands.send(device, byId.data);
      return true;
    }
    if (subs.length === 0 && SUBDEVICE_ID_RE.test(da)) {
      throw badRequest(`rf sub-device ${da} of ${device.guid} does not exist (deleted?)`);
    }
    const now = this.clock();
    for (const s of subs) await this.store.subdevices.addActuation(s.id, now);
    return false;
  }

  private async webhook(device: DeviceRow, da: string): Promise<void> {
    const subs = await this.store.subdevices.match(device.id, "webhook", "actuator", da);
    if (subs.length === 0) throw badRequest(`no webhook actuator with data or id "${da}" on ${device.guid}`);
    for (const sub of subs) {
      await this.call(sub, { id: sub.sid, shortName: sub.short_name, data: sub.data, DA: da, GUID: device.guid, timestamp: this.clock() });
    }
  }

  private async call(sub: SubDeviceRow, payload: unknown): Promise<void> {
    if (sub.url === null) throw badRequest(`webhook actuator ${sub.sid} has no url`);
    try {
      // A call made by a rule's run says which rules led to it, so that a tickle it causes does
      // not fire them again (rules/cause.ts).
      const cause = currentCause();
      const body = JSON.stringify(payload);
      const secret = webhookSecret(this.options.key?.() ?? Buffer.alloc(32), sub.device_id, sub.sid);
      const headers: Record<string, string> = { [SIGNATURE_HEADER]: signature(secret, body), [DELIVERY_HEADER]: randomUUID() };
      if (cause) headers[CAUSE_HEADER] = formatCause(cause);
      const r = await send("POST", sub.url, body, "application/json", { timeoutMs: this.timeoutMs, dispatcher: this.options.dispatcher, headers });
      if (r.status < 200 || r.status > 299) throw new OutgoingError(`POST ${redactTarget(sub.url)} answered ${r.status}`, r.status);
    } catch (err) {
      this.log.warn({ sid: sub.sid, target: redactTarget(sub.url), err: (err as Error).message }, "webhook call failed");
      // One text whatever went wrong: a refused connection, a timeout and an HTTP error must not
      // tell a user which ports are open on the server's network. The log has the detail.
      throw unavailable(`webhook actuator ${sub.sid}: the call failed (no 2xx answer within ${this.timeoutMs} ms)`, err);
    }
    await this.store.subdevices.addActuation(sub.id, this.clock());
  }

  private async sms(device: DeviceRow, da: string): Promise<void> {
    const m = /^(s[0-9a-z]{7}):([\s\S]*)$/.exec(da);
    let subs: SubDeviceRow[];
    let body = da;
    const one = m ? await this.store.subdevices.get(device.id, m[1] as string) : null;
    if (m && one && one.category === "sms" && one.type === "actuator") {
      subs = [one];
      body = m[2] as string;
    } else {
      subs = (await this.store.subdevices.byDevices([device.id])).filter((s) => s.category === "sms" && s.type === "actuator");
    }
    if (subs.length === 0) throw badRequest(`the SMS device ${device.guid} has no sms actuator (a phone number) to send to`);
    const url = this.options.smsUrl;
    if (!url) throw unavailable("no SMS gateway is configured: start the server with --sms-url");
    for (const sub of subs) {
      try {
        await postJson(url, { to: sub.data, body }, { timeoutMs: this.timeoutMs, dispatcher: this.options.smsDispatcher });
      } catch (err) {
        throw unavailable(`the SMS gateway failed for sub-device ${sub.sid}: ${(err as Error).message}`, err);
      }
      await this.store.subdevices.addActuation(sub.id, this.clock());
    }
  }
}
