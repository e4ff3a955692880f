/**
 * Sub-devices (DESIGN.md "Sub-devices"): extra stored values under one device. `rf` lives on an
 * rf433 device (D 11), `webhook` on the user's Webhooks device (D 108), `sms` on the user's SMS
 * device (D 103). Webhook sensors are actuated by a tickle, rf sensors whenever their parent reports
 * their code; each actuation is counted for GET …/subdevice/:id/data.
 */
import { randomInt } from "node:crypto";
import type { Logger } from "pino";
import type { SubDeviceCreate, SubDeviceJson, SubDeviceUpdate } from "../../../protocol/automation.js";
import { D } from "../../../protocol/device-types.js";
import { numericValue, parseInterval } from "../../../protocol/history.js";
import { badRequest, conflict, notFound, unauthorized } from "../../errors.js";
import type { DeviceRow, Store, SubDeviceRow } from "../../store/types.js";
import type { DeviceService } from "../devices.js";
import { type DataPoint, MAX_RAW_POINTS, resolveRange } from "../history.js";
import type { CommittedEvent, Ingest } from "../ingest.js";
import { hashToken, newToken, safeEqual } from "../secrets.js";
import { serviceDeviceGuid } from "../service-devices.js";
import { webhookSecret } from "./webhook-secret.js";
import { formatPointTime } from "../../../protocol/history.js";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";
const RF_CODE = /^[0-9A-Fa-f]{1,4096}$/;
const PHONE = /^\+?[0-9][0-9 ()-]{2,31}$/;

function newSid(): string {
  let s = "s";
  for (let i = 0; i < 7; i++) s += ALPHABET[randomInt(ALPHABET.length)];
  return s;
}

export function subDeviceJson(row: SubDeviceRow): SubDeviceJson {
  const json: SubDeviceJson = { category: row.category, type: row.type, shortName: row.short_name, data: row.data };
  if (row.url !== null) json.url = row.url;
  return json;
}

/** Checks a sub-device's fields against its parent; throws a 400 naming the problem. */
function validate(row: Omit<SubDeviceRow, "id">, parent: DeviceRow, userId: number): void {
  if (row.category === "rf" && !(parent.v === 0 && parent.d === D.rf433)) {
    throw badRequest(`category rf needs an rf433 device (D ${D.rf433}); ${parent.guid} is not one`);
  }
  if (row.category === "webhook" && parent.guid !== serviceDeviceGuid(userId, D.webhook)) {
    throw badRequest(`category webhook belongs on your Webhooks device ${serviceDeviceGuid(userId, D.webhook)}, not ${parent.guid}`);
  }
  if (row.category === "sms" && parent.guid !== serviceDeviceGuid(userId, D.sms)) {
    throw badRequest(`category sms belongs on your SMS device ${serviceDeviceGuid(userId, D.sms)}, not ${parent.guid}`);
  }
  if (row.url !== null && !(row.category === "webhook" && row.type === "actuator")) {
    throw badRequest("url is only for a webhook actuator");
  }
  if (row.category === "webhook" && row.type === "actuator" && row.url === null) {
    throw badRequest("url is required for a webhook actuator (the address the service calls)");
  }
  if (row.category === "rf" && !RF_CODE.test(row.data)) {
    throw badRequest("data of an rf sub-device must be its code: a binary or hex string");
  }
  if (row.category === "sms" && row.type === "sensor") throw badRequest("sms sub-devices are actuators: the SMS gateway only sends");
  if (row.category === "sms" && !PHONE.test(row.data)) throw badRequest("data of an sms actuator must be a phone number, e.g. +447700900123");
}

export class SubDeviceService {
  constructor(
    private readonly store: Store,
    private readonly devices: DeviceService,
    private readonly ingest: Ingest,
    private readonly log: Logger,
    private readonly clock: () => number = Date.now,
    private readonly key: () => Buffer = () => Buffer.alloc(32),
  ) {}

  /** Fills `subDevices` of device JSON (installed with DeviceService.setSubDeviceView). */
  readonly view = async (deviceIds: number[]): Promise<Map<number, Record<string, SubDeviceJson>>> => {
    const out = new Map<number, Record<string, SubDeviceJson>>();
    for (const row of await this.store.subdevices.byDevices(deviceIds)) {
      let subs = out.get(row.device_id);
      if (!subs) out.set(row.device_id, (subs = {}));
      subs[row.sid] = subDeviceJson(row);
    }
    return out;
  };

  async create(userId: number, guid: string, body: SubDeviceCreate): Promise<{ id: string; token?: string; secret?: string }> {
    if (body.category === "webhook" && !(await this.store.devices.byGuid(serviceDeviceGuid(userId, D.webhook)))) {
      throw conflict("category webhook needs the Webhooks device: add it first with GET {auth_url}/auth/webhook or the settings page");
    }
    if (body.category === "sms" && !(await this.store.devices.byGuid(serviceDeviceGuid(userId, D.sms)))) {
      throw conflict("category sms needs the SMS device: add it first with GET {auth_url}/auth/sms or the settings page");
    }
    const parent = await this.devices.owned(userId, guid);
    const token = body.category === "webhook" && body.type === "sensor" ? newToken() : undefined;
    const row = {
      device_id: parent.id,
      sid: newSid(),
      category: body.category,
      type: body.type,
      short_name: body.shortName,
      data: body.data ?? "",
      url: body.url ?? null,
      token_hash: token === undefined ? null : hashToken(token),
      created: this.clock(),
    };
    validate(row, parent, userId);
    while (await this.store.subdevices.get(parent.id, row.sid)) row.sid = newSid();
    await this.store.subdevices.add(row);
    this.devices.changed(parent);
    // A webhook actuator's calls are signed; its owner verifies them with this secret.
    if (row.category === "webhook" && row.type === "actuator") return { id: row.sid, secret: webhookSecret(this.key(), parent.id, row.sid) };
    return token === undefined ? { id: row.sid } : { id: row.sid, token };
  }

  /** Changes fields; a sub-device that becomes a webhook sensor gets a new token, returned here. */
  async update(userId: number, guid: string, sid: string, body: SubDeviceUpdate): Promise<{ token?: string }> {
    const { parent, sub } = await this.find(userId, guid, sid);
    const next: SubDeviceRow = {
      ...sub,
      category: body.category ?? sub.category,
      type: body.type ?? sub.type,
      short_name: body.shortName ?? sub.short_name,
      data: body.data ?? sub.data,
      url: body.url ?? sub.url,
    };
    const webhookSensor = next.category === "webhook" && next.type === "sensor";
    if (!(next.category === "webhook" && next.type === "actuator") && body.url === undefined) next.url = null;
    let token: string | undefined;
    if (!webhookSensor) next.token_hash = null;
    else if (next.token_hash === null) {
      token = newToken();
      next.token_hash = hashToken(token);
    }
    validate(next, parent, userId);
    await this.store.subdevices.update(next);
    this.devices.changed(parent);
    return token === undefined ? {} : { token };
  }

  async remove(userId: number, guid: string, sid: string): Promise<void> {
    const { parent, sub } = await this.find(userId, guid, sid);
    await this.store.subdevices.remove(sub.id);
    this.devices.changed(parent);
  }

  /** Actuation counts per interval (history's interval rules; without interval, one point per actuation). */
  async data(userId: number, guid: string, sid: string, q: { from?: number; to?: number; interval?: string }): Promise<DataPoint[]> {
    const { sub } = await this.find(userId, guid, sid);
    const { from, to } = resolveRange(q, this.clock());
    const interval = q.interval === undefined ? null : parseInterval(q.interval);
    if (q.interval !== undefined && interval === null) {
      throw badRequest(`interval "${q.interval}" is not <number><unit> with unit min, hour, day, month or year`);
    }
    if (interval === null && (await this.store.subdevices.actuationCount(sub.id, from, to)) > MAX_RAW_POINTS) {
      throw badRequest(`the range holds more than ${MAX_RAW_POINTS} actuations: narrow from/to or give an interval`);
    }
    const points = await this.store.subdevices.actuations(sub.id, { from, to, interval });
    return points.map((p) => ({ t: formatPointTime(p.t), v: p.v }));
  }

  /**
   * A tickle: the path token authorises it. Counts an actuation and emits a data event on the
   * Webhooks device with DA = the sub-device's data (its id when empty), so rules fire on it.
   */
  async tickle(guid: string, sid: string, token: string, cause?: readonly number[]): Promise<void> {
    const device = await this.store.devices.byGuid(guid);
    const sub = device ? await this.store.subdevices.get(device.id, sid) : null;
    // Hash and compare even when the sub-device is unknown, so timing does not tell the cases apart.
    const matches = safeEqual(hashToken(token), sub?.token_hash ?? "0".repeat(64));
    if (!device || !sub || sub.category !== "webhook" || sub.type !== "sensor" || !matches) {
      throw unauthorized("unknown webhook sensor or wrong tickle token");
    }
    const now = this.clock();
    await this.store.subdevices.addActuation(sub.id, now);
    const DA = sub.data === "" ? sub.sid : sub.data;
    await this.ingest.submit([
      { kind: "data", userId: device.user_id, node: device.node_id, guid: device.guid, G: device.g, V: device.v, D: device.d, DA, num: numericValue(DA), ts: now, cause },
    ]);
  }

  /** Commit listener: an rf sensor counts an actuation each time its parent reports its code. */
  readonly onCommitted = (events: CommittedEvent[]): void => {
    for (const e of events) {
      if (e.kind === "config" || e.V !== 0 || e.D !== D.rf433) continue;
      this.countRf(e).catch((err: unknown) => this.log.error({ err, guid: e.guid }, "counting an rf actuation failed"));
    }
  };

  private async countRf(e: CommittedEvent): Promise<void> {
    for (const sub of await this.store.subdevices.match(e.deviceId, "rf", "sensor", e.DA)) {
      if (sub.data === e.DA) await this.store.subdevices.addActuation(sub.id, e.ts);
    }
  }

  private async find(userId: number, guid: string, sid: string): Promise<{ parent: DeviceRow; sub: SubDeviceRow }> {
    const parent = await this.devices.owned(userId, guid);
    const sub = await this.store.subdevices.get(parent.id, sid);
    if (!sub) throw notFound(`device ${guid} has no sub-device ${sid}`);
    return { parent, sub };
  }
}
