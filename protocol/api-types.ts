/** Response and request shapes of the user-side API (spec "Resources and their fields"). */
import type { CallbackPayload, RuleJson as AutomationRuleJson, RuleRunJson, SubDeviceJson } from "./automation.js";

export type {
  RuleBody,
  RuleHandler,
  RuleRunJson,
  SubDeviceCategory,
  SubDeviceCreate,
  SubDeviceJson,
  SubDeviceType,
} from "./automation.js";

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
  /** Both null until the device has reported a value (a device created by a config event). */
  last_data: { DA: string | number | null; timestamp: number | null };
}

export interface HeartbeatRecord {
  G: string;
  V: number;
  D: number;
  DA: string | number | null;
  GUID: string;
  timestamp: number | null;
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

export interface BlockJson {
  date_created: number;
  last_active: number;
  short_name: string;
}

/** GET /rule/:rid adds the rule's recent runs. */
export type RuleJson = AutomationRuleJson & { history?: RuleRunJson[] };
/** The body the service POSTs to a callback URL (DESIGN.md "Callbacks"). */
export type CallbackDelivery = CallbackPayload;

/** GET /user (this implementation's own route): who the credential belongs to, and the server's version. */
export interface UserJson {
  name: string;
  /** `user`: a personal access token; `oauth`: an OAuth application's access token; other kinds may follow (a browser session). */
  credential: string;
  version: string;
}
