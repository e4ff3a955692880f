/**
 * Service devices: devices that live on the user's own service node rather than on hardware
 * (Webhooks D 108, SMS D 103, File Host D 104, Email D 106). The service node is a block row owned
 * by the user, named after the user id, that no hardware can activate (it has no block token).
 */
import { forbidden } from "../errors.js";
import { D } from "../../protocol/device-types.js";
import { makeGuid } from "../../protocol/guid.js";
import type { DeviceRow, IngestEvent, Store } from "../store/types.js";
import { configPatch } from "./ingest.js";

export const SERVICE_DEVICE_IDS = [D.sms, D.filehost, D.email, D.webhook] as const;
export type ServiceDeviceId = (typeof SERVICE_DEVICE_IDS)[number];

/** The user's service node id: `SVC` and the user id on 9 digits (12 characters, alphanumeric). */
export function serviceNodeId(userId: number): string {
  return `SVC${String(userId).padStart(9, "0")}`;
}

export function isServiceNode(nodeId: string): boolean {
  return /^SVC\d{9,}$/.test(nodeId);
}

/**
 * Refuses a service node id where a block's goes (activation, claim, a block token's path): no flow
 * makes one a block, not for its owner, nor for another account before the owner has made it (it
 * would then hold that account's Webhooks device and could send its events).
 */
export function refuseServiceNode(nodeId: string): void {
  if (isServiceNode(nodeId)) {
    throw forbidden(`node ${nodeId} is an account's service node (SVC and a user id): it is no block, and no block token acts for it`);
  }
}

/** The service device's GUID for a user (port "0", vendor 0). */
export function serviceDeviceGuid(userId: number, d: ServiceDeviceId): string {
  return makeGuid({ node: serviceNodeId(userId), G: "0", V: 0, D: d });
}

/** Adds the service device to the user's account when it is missing; returns it. */
export async function ensureServiceDevice(store: Store, userId: number, d: ServiceDeviceId, now: number): Promise<DeviceRow> {
  const guid = serviceDeviceGuid(userId, d);
  const existing = await store.devices.byGuid(guid);
  if (existing) return existing;
  const node = serviceNodeId(userId);
  if (!(await store.blocks.get(node))) await store.blocks.claim(node, userId, now, null);
  const plugin: IngestEvent = { kind: "config", userId, node, guid, G: "0", V: 0, D: d, DA: "PLUGIN", num: null, ts: now, payload: { type: "PLUGIN" } };
  await store.events.commit([{ ...plugin, meta: configPatch(plugin) }]);
  const row = await store.devices.byGuid(guid);
  if (!row) throw new Error(`service device ${guid} was not created`);
  return row;
}
