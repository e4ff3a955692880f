/** Response and request shapes of the user-side API (spec "Resources and their fields"). */

export interface DeviceJson {
  guid?: string;
  vid: string;
  did: string;
  gid: string;
  node: string;
  device_type: string;
  default_name: string;
  shortName: string;
  css_class: string;
  is_sensor: 0 | 1;
  is_actuator: 0 | 1;
  is_silent: 0 | 1;
  has_time_series: 0 | 1;
  has_subdevice_count: number;
  meta: Record<string, unknown>;
  subDevices: Record<string, SubDeviceJson>;
  last_data: { DA: string | number; timestamp: number } | Record<string, never>;
}

export interface HeartbeatRecord {
  G: string;
  V: number;
  D: number;
  DA: string | number;
  GUID: string;
  timestamp: number;
  node: string;
}

export interface DataPoint {
  /** `YYYY-MM-DDTHH:MM:SS.mmm+0000` */
  t: string;
  v: number | string;
}

export interface HistoryParams {
  /** Epoch ms. */
  from?: number;
  /** Epoch ms. */
  to?: number;
  /** `<number><unit>`, unit one of min, hour, day, month, year. */
  interval?: string;
  fn?: "mean" | "sum" | "min" | "max" | "stddev" | "ss" | "count";
}

export interface CallbackJson {
  url: string;
  /** Present on this implementation: the secret the deliveries are signed with. */
  secret?: string;
}

export type SubDeviceCategory = "rf" | "webhook" | "sms";
export type SubDeviceType = "actuator" | "sensor";

export interface SubDeviceJson {
  category: SubDeviceCategory;
  type: SubDeviceType;
  shortName: string;
  data?: string;
  url?: string;
}

export interface SubDeviceCreate {
  category: SubDeviceCategory;
  type: SubDeviceType;
  shortName: string;
  data?: string;
  url?: string;
}

export interface BlockJson {
  date_created: number;
  last_active: number;
  short_name: string;
}

export interface RuleHandler {
  handler: string;
  params: Record<string, unknown>;
}

export interface RuleBody {
  shortName: string;
  preconditions: RuleHandler[];
  actions: RuleHandler[];
  /** Seconds before the rule can fire again. */
  timeout?: number;
}

export interface RuleJson extends RuleBody {
  rid: number | string;
  timeout: number;
  store: Record<string, unknown>;
  suspended: boolean;
}

/** The body the service POSTs to a callback URL (DESIGN.md "Callbacks"). */
export interface CallbackDelivery {
  GUID: string;
  G: string;
  V: number;
  D: number;
  DA: string | number;
  timestamp: number;
  node: string;
}
