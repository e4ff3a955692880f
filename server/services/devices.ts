/** Devices as the user API shows them, with ownership checks. */
import type { DeviceJson, HeartbeatRecord, SubDeviceJson } from "../../protocol/api-types.js";
import { cssClass, deviceType } from "../../protocol/device-types.js";
import { numericValue } from "../../protocol/history.js";
import { badRequest, notFound } from "../errors.js";
import type { DeviceRow, Store } from "../store/types.js";
import type { CommandHub } from "./commands.js";
import type { StreamPublisher } from "./stream/publisher.js";

/** Adds the sub-devices of devices to their JSON (the automation layer provides it). */
export type SubDeviceView = (deviceIds: number[]) => Promise<Map<number, Record<string, SubDeviceJson>>>;

/** DA as shown to users: a number for numeric device types when it parses as one. */
export function shownDA(row: Pick<DeviceRow, "v" | "d" | "last_da">): number | string | null {
  if (row.last_da === null) return null;
  if (!deviceType(row.v, row.d).numeric) return row.last_da;
  return numericValue(row.last_da) ?? row.last_da;
}

export class DeviceService {
  private subDeviceView: SubDeviceView | null = null;

  constructor(
    private readonly store: Store,
    private readonly commands: CommandHub,
    private readonly events?: StreamPublisher,
  ) {}

  /** Tells the live stream that what the device JSON shows changed (name, sub-devices). */
  changed(row: Pick<DeviceRow, "user_id" | "guid">): void {
    this.events?.device(row.user_id, row.guid, "updated");
  }

  setSubDeviceView(view: SubDeviceView): void {
    this.subDeviceView = view;
  }

  /** The user's device or 404; another user's device is reported as unknown too. */
  async owned(userId: number, guid: string): Promise<DeviceRow> {
    const row = await this.store.devices.byGuid(guid);
    if (!row || row.user_id !== userId) throw notFound(`unknown device ${guid}`);
    return row;
  }

  toJson(row: DeviceRow, subDevices: Record<string, SubDeviceJson> = {}, withGuid = true): DeviceJson {
    const t = deviceType(row.v, row.d);
    const json: DeviceJson = {
      vid: String(row.v),
      did: String(row.d),
      gid: row.g,
      node: row.node_id,
      device_type: t.device_type,
      default_name: t.default_name,
      shortName: row.short_name ?? t.default_name,
      css_class: cssClass(t),
      is_sensor: t.is_sensor,
      is_actuator: t.is_actuator,
      is_silent: row.is_silent ? 1 : 0,
      has_time_series: t.has_time_series,
      has_subdevice_count: Object.keys(subDevices).length > 0 ? 1 : 0,
      meta: row.meta,
      subDevices,
      last_data: { DA: shownDA(row), timestamp: row.last_ts },
    };
    return withGuid ? { guid: row.guid, ...json } : json;
  }

  async list(userId: number): Promise<Record<string, DeviceJson>> {
    const rows = await this.store.devices.list(userId);
    const subs = this.subDeviceView ? await this.subDeviceView(rows.map((r) => r.id)) : new Map();
    const out: Record<string, DeviceJson> = {};
    for (const row of rows) out[row.guid] = this.toJson(row, subs.get(row.id) ?? {}, false);
    return out;
  }

  async get(userId: number, guid: string): Promise<DeviceJson> {
    const row = await this.owned(userId, guid);
    const subs = this.subDeviceView ? await this.subDeviceView([row.id]) : new Map();
    return this.toJson(row, subs.get(row.id) ?? {});
  }

  async heartbeat(userId: number, guid: string): Promise<HeartbeatRecord> {
    const row = await this.owned(userId, guid);
    return { G: row.g, V: row.v, D: row.d, DA: shownDA(row), GUID: row.guid, timestamp: row.last_ts, node: row.node_id };
  }

  /** Sends a command to a device the user owns. */
  async actuate(row: DeviceRow, da: string): Promise<void> {
    const t = deviceType(row.v, row.d);
    if (!t.is_actuator && t.device_type !== "unknown") {
      throw badRequest(`device ${row.guid} (${t.device_type}) is not an actuator and takes no commands`);
    }
    await this.commands.send(row, da);
  }

  async rename(row: DeviceRow, shortName: string): Promise<void> {
    await this.store.devices.setShortName(row.id, shortName);
    this.changed(row);
  }

  async remove(userId: number, guid: string): Promise<void> {
    const row = await this.owned(userId, guid);
    await this.store.devices.remove(row.id);
    this.events?.device(row.user_id, row.guid, "deleted");
  }
}
