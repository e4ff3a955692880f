/**
 * Store types of automation as users set it up: callbacks, sub-devices and their actuations, rules
 * with their run history, and camera snapshots. Apart from types.ts so that each group of
 * repositories reads on its own; types.ts re-exports them with the Store they make up.
 */
import type { RuleHandler, RuleRunJson } from "../../protocol/automation.js";
import type { HistoryPoint, HistoryQuery } from "./types-devices.js";

export interface CallbackRow {
  device_id: number;
  url: string;
  secret: string;
  created: number;
}

export type SubDeviceCategory = "rf" | "webhook" | "sms";
export type SubDeviceType = "actuator" | "sensor";

export interface SubDeviceRow {
  id: number;
  device_id: number;
  /** The short id shown to users, unique within the device. */
  sid: string;
  category: SubDeviceCategory;
  type: SubDeviceType;
  short_name: string;
  data: string;
  url: string | null;
  /** sha256 hex of a webhook sensor's tickle token. */
  token_hash: string | null;
  created: number;
}

export interface RuleRow {
  id: number;
  user_id: number;
  short_name: string;
  preconditions: RuleHandler[];
  actions: RuleHandler[];
  /** Seconds. */
  timeout: number;
  suspended: boolean;
  created: number;
}

export interface RuleRunRow {
  rule_id: number;
  ts: number;
  ok: boolean;
  /** What each action did. */
  steps: RuleRunJson["steps"];
  error: string | null;
}

export interface SnapshotRow {
  device_id: number;
  seq: number;
  content_type: string;
  body: Buffer;
  created: number;
}

export interface CallbacksRepo {
  get(deviceId: number): Promise<CallbackRow | null>;
  set(row: CallbackRow): Promise<void>;
  remove(deviceId: number): Promise<boolean>;
}

export interface SubDevicesRepo {
  add(row: Omit<SubDeviceRow, "id">): Promise<SubDeviceRow>;
  get(deviceId: number, sid: string): Promise<SubDeviceRow | null>;
  byDevices(deviceIds: number[]): Promise<SubDeviceRow[]>;
  /** Sub-devices of a device of a category and type whose data or sid equals `key`. */
  match(deviceId: number, category: SubDeviceCategory, type: SubDeviceType, key: string): Promise<SubDeviceRow[]>;
  update(row: SubDeviceRow): Promise<void>;
  remove(id: number): Promise<boolean>;
  addActuation(id: number, ts: number): Promise<void>;
  actuations(id: number, q: Omit<HistoryQuery, "fn">): Promise<HistoryPoint[]>;
  actuationCount(id: number, from: number, to: number): Promise<number>;
}

export interface RulesRepo {
  create(row: Omit<RuleRow, "id">): Promise<RuleRow>;
  get(id: number): Promise<RuleRow | null>;
  list(userId: number): Promise<RuleRow[]>;
  count(userId: number): Promise<number>;
  /** Every rule of every user (the engine's index at start). */
  all(): Promise<RuleRow[]>;
  update(row: RuleRow): Promise<void>;
  setSuspended(id: number, suspended: boolean): Promise<void>;
  remove(id: number): Promise<boolean>;
  /** Records runs (one transaction) and keeps only the newest `keep` runs of each rule. */
  addRuns(runs: RuleRunRow[], keep: number): Promise<void>;
  runs(ruleId: number): Promise<RuleRunRow[]>;
}

export interface SnapshotsRepo {
  /** Keeps the camera's latest upload; returns its sequence number. */
  put(deviceId: number, contentType: string, body: Buffer, now: number): Promise<number>;
  get(deviceId: number): Promise<SnapshotRow | null>;
}
