/**
 * What the fake serial node (serial-node.ts) knows of each firmware it plays: the profiles (version,
 * how it reads its input, whether it sends ERROR, what it acts on, heartbeat, boot frames, DA
 * buffer), the board's input buffer and reset time, and how a firmware reads a command (the first
 * JSON object of a read, then DEVICE[0]). Apart from the node's behaviour over time (resets, reads,
 * answers), which is the same for every firmware and reads these as data.
 */

export type SerialNodeProfile = "0.47" | "V12_1.00" | "blockkit";
export const SERIAL_NODE_PROFILES: readonly SerialNodeProfile[] = ["0.47", "V12_1.00", "blockkit"];

export interface ProfileSpec {
  version: string;
  versionFrame: "ACK" | "DEVICE";
  reader: "burst" | "line";
  /** Sends ERROR frames. */
  errors: boolean;
  /** D values it acts on (others: ERROR 3, or an ACK when it never errors). */
  actuators: readonly number[];
  heartbeatMs: number | null;
  bootUnplugEmpty: boolean;
  /** Its DA buffer, characters (longer ones overflow). */
  daChars: number | null;
}

/** Input buffer of the Uno-class firmwares, bytes. */
export const NODE_INPUT_BYTES = 128;
/** Deaf time after a reset (bootloader, then setup()), ms. */
export const NODE_RESET_DEAF_MS = 1_800;
/** The firmware reads what has arrived together in one go: input is read this long after it arrives, ms. */
export const READ_DELAY_MS = 5;

export const PROFILES: Record<SerialNodeProfile, ProfileSpec> = {
  "0.47": {
    version: "V12_0.47",
    versionFrame: "ACK",
    reader: "burst",
    errors: true,
    // Built for V12 hardware: the eyes LED is D 1007 there (D 1000 is the V11 board's).
    actuators: [11, 999, 1002, 1003, 1007],
    heartbeatMs: 30_000,
    bootUnplugEmpty: false,
    daChars: 64,
  },
  "V12_1.00": {
    version: "V12_1.00",
    versionFrame: "ACK",
    reader: "line",
    errors: false,
    actuators: [11, 999, 1000, 1002, 1003, 1007],
    heartbeatMs: null,
    bootUnplugEmpty: true,
    daChars: null,
  },
  blockkit: {
    version: "blockkit_1",
    versionFrame: "DEVICE",
    reader: "line",
    errors: true,
    actuators: [11, 999, 1000, 1002, 1003, 1007],
    heartbeatMs: null,
    bootUnplugEmpty: false,
    daChars: null,
  },
};

export const LED_DS = new Set([999, 1000, 1007]);

/** The first JSON object at the start of `text` (what aJson.parse reads), or undefined. */
export function firstJsonObject(text: string): unknown {
  const start = text.search(/\S/);
  if (start === -1 || text[start] !== "{") return undefined;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) {
        try {
          return JSON.parse(text.slice(start, i + 1)) as unknown;
        } catch {
          return undefined;
        }
      }
    }
  }
  return undefined;
}

/** DEVICE[0] as the firmware takes it: G a string, V and D whole numbers, DA a string or a whole number. */
export function deviceOf(json: unknown): { G: string; V: number; D: number; DA: string | number } | null {
  if (typeof json !== "object" || json === null) return null;
  const list = (json as { DEVICE?: unknown }).DEVICE;
  if (!Array.isArray(list) || list.length === 0) return null;
  const d = list[0] as Record<string, unknown>;
  if (typeof d !== "object" || d === null) return null;
  const { G, V, D, DA } = d;
  if (typeof G !== "string" || !Number.isInteger(V) || !Number.isInteger(D)) return null;
  if (typeof DA !== "string" && !Number.isInteger(DA)) return null;
  return { G, V: V as number, D: D as number, DA: DA as string | number };
}
