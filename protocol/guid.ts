/** Node ids, ports and GUIDs (DESIGN.md "Devices"). */

/** A block's node id: at least 12 alphanumeric characters. */
export const NODE_ID_PATTERN = "^[A-Za-z0-9]{12,64}$";
export const NODE_ID_RE = new RegExp(NODE_ID_PATTERN);
/** A port (G): alphanumeric. */
export const PORT_RE = /^[A-Za-z0-9]{1,32}$/;

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
  const m = /^([A-Za-z0-9]{12,64})_([A-Za-z0-9]{1,32})_(\d{1,9})_(\d{1,9})$/.exec(guid);
  if (!m) return null;
  return { node: m[1] as string, G: m[2] as string, V: Number(m[3]), D: Number(m[4]) };
}

export function isNodeId(s: string): boolean {
  return NODE_ID_RE.test(s);
}
