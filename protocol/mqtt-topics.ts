/**
 * The MQTT topic scheme of the hardware nodes (DESIGN.md "MQTT link"), relative to a prefix
 * (default `blockkit`): a node publishes `<prefix>/<G>_<V>_<D>/data` (the DA as text, or JSON
 * `{"DA":…}`), `…/heartbeat`, `…/config` (the config type, e.g. `PLUGIN`, as text or `{"type":…}`);
 * the gateway publishes commands to `<prefix>/<G>_<V>_<D>/command` (QoS 1, never retained) and its
 * own state to `<prefix>/gateway/status` (`online`/`offline`, retained; `offline` is the last will).
 */
import { DEVICE_KEY_RE } from "./guid.js";

export const DEFAULT_MQTT_PREFIX = "blockkit";
export type NodeTopicKind = "data" | "heartbeat" | "config";

export interface NodeTopic {
  G: string;
  V: number;
  D: number;
  kind: NodeTopicKind;
}

const PREFIX_RE = /^[^#+\s]+(\/[^#+\s]+)*$/;

export function validPrefix(prefix: string): boolean {
  return PREFIX_RE.test(prefix) && !prefix.endsWith("/") && prefix.length <= 200;
}

/** The subscription that covers every node topic. */
export function nodeSubscriptions(prefix: string): string[] {
  return [`${prefix}/+/data`, `${prefix}/+/heartbeat`, `${prefix}/+/config`];
}

export function commandTopic(prefix: string, d: { G: string; V: number; D: number }): string {
  return `${prefix}/${d.G}_${d.V}_${d.D}/command`;
}

export function statusTopic(prefix: string): string {
  return `${prefix}/gateway/status`;
}

/** Parses a node topic under `prefix`; null for anything else (including the gateway's own topics). */
export function parseNodeTopic(prefix: string, topic: string): NodeTopic | null {
  if (!topic.startsWith(`${prefix}/`)) return null;
  const rest = topic.slice(prefix.length + 1).split("/");
  if (rest.length !== 2) return null;
  const [dev, kind] = rest as [string, string];
  if (kind !== "data" && kind !== "heartbeat" && kind !== "config") return null;
  const m = DEVICE_KEY_RE.exec(dev);
  if (!m) return null;
  return { G: m[1] as string, V: Number(m[2]), D: Number(m[3]), kind };
}

/**
 * The value of a node payload: plain text, or JSON `{"DA":…}` (data/heartbeat) / `{"type":…}`
 * (config). Null when empty or unusable.
 */
export function parseNodePayload(kind: NodeTopicKind, payload: Uint8Array): string | null {
  const text = Buffer.from(payload).toString("utf8").trim();
  if (text.length === 0 || text.length > 4096) return null;
  if (text.startsWith("{")) {
    try {
      const o = JSON.parse(text) as Record<string, unknown>;
      const v = kind === "config" ? (o.type ?? o.DA) : o.DA;
      if (typeof v === "string" && v.length > 0) return v;
      if (typeof v === "number" && Number.isFinite(v)) return String(v);
      return null;
    } catch {
      return text;
    }
  }
  return text;
}
