/**
 * Node ids, ports and GUIDs (docs/design.md "Devices"): the one place their patterns are written.
 * Schemas take the anchored `*_PATTERN` strings; code that builds a larger pattern takes `*_SOURCE`.
 */

/** A block's node id: 12 to 64 letters and digits. */
export const NODE_ID_SOURCE = "[A-Za-z0-9]{12,64}";
export const NODE_ID_PATTERN = `^${NODE_ID_SOURCE}$`;
export const NODE_ID_RE = new RegExp(NODE_ID_PATTERN);
/** A port (G): 1 to 32 letters and digits. */
export const PORT_SOURCE = "[A-Za-z0-9]{1,32}";
export const PORT_PATTERN = `^${PORT_SOURCE}$`;
const PORT_RE = new RegExp(PORT_PATTERN);
/** `<G>_<V>_<D>`: a device's address on its block (MQTT topics use it). */
export const DEVICE_KEY_RE = new RegExp(`^(${PORT_SOURCE})_(\\d{1,9})_(\\d{1,9})$`);
const GUID_RE = new RegExp(`^(${NODE_ID_SOURCE})_(${PORT_SOURCE})_(\\d{1,9})_(\\d{1,9})$`);

export interface DeviceAddress {
  node: string;
  G: string;
  V: number;
  D: number;
}

export function makeGuid(a: DeviceAddress): string {
  return `${a.node}_${a.G}_${a.V}_${a.D}`;
}

/** Parses `<node>_<G>_<V>_<D>`; null when the text is not such a GUID. */
export function parseGuid(guid: string): DeviceAddress | null {
  const m = GUID_RE.exec(guid);
  if (!m) return null;
  return { node: m[1] as string, G: m[2] as string, V: Number(m[3]), D: Number(m[4]) };
}

export function isNodeId(s: string): boolean {
  return NODE_ID_RE.test(s);
}

export function isPort(s: string): boolean {
  return PORT_RE.test(s);
}
