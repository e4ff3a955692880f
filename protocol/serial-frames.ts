/**
 * The Ninja serial frames (DESIGN.md "Serial link"): one JSON object per line, 9600 baud 8N1,
 * lines ending in `\r\n` (a bare `\n` is accepted).
 *
 * Node -> gateway: `{"DEVICE":[{G,V,D,DA}]}` readings, `{"PLUGIN":[…]}` / `{"UNPLUG":[…]}`,
 * `{"ACK":[…]}` echoing a command, `{"ERROR":[{"CODE":n}]}`.
 * Gateway -> node: `{"DEVICE":[{G,V,D,DA}]}`; the firmware version is asked with D 1003, DA `VNO`.
 * DA is always carried as a string: RF 433 codes (bit strings or hex packets) pass through untouched.
 */
import { isPort } from "./guid.js";

export interface NodeDevice {
  G: string;
  V: number;
  D: number;
  /** Absent in PLUGIN/UNPLUG frames of some firmware. */
  DA?: string;
}

export type SerialFrame =
  | { kind: "DEVICE"; devices: NodeDevice[] }
  | { kind: "PLUGIN"; devices: NodeDevice[] }
  | { kind: "UNPLUG"; devices: NodeDevice[] }
  | { kind: "ACK"; devices: NodeDevice[] }
  | { kind: "ERROR"; codes: number[] };

export type DecodeResult = { ok: true; frame: SerialFrame } | { ok: false; reason: string };

/** What each firmware ERROR code means. */
export const SERIAL_ERRORS: Readonly<Record<number, string>> = {
  1: "the firmware could not parse the JSON it was sent",
  2: "the firmware supports vendor id V 0 only",
  3: "the firmware does not know that device id D",
  4: "the firmware version query was malformed",
};

export function serialErrorMeaning(code: number): string {
  return SERIAL_ERRORS[code] ?? `unknown error code ${code}`;
}

/** The board's own port and the firmware-version device. */
export const VERSION_QUERY: NodeDevice = { G: "0", V: 0, D: 1003, DA: "VNO" };

/** Longest line accepted, characters; longer ones are garbage (noise on the line). */
export const MAX_LINE = 8192;

const KINDS = ["DEVICE", "PLUGIN", "UNPLUG", "ACK", "ERROR"] as const;

/** Decodes one line (without or with its `\r\n`). Never throws. */
export function decodeFrame(line: string): DecodeResult {
  const text = line.trim();
  if (text.length === 0) return { ok: false, reason: "empty line" };
  if (text.length > MAX_LINE) return { ok: false, reason: `line longer than ${MAX_LINE} characters` };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, reason: "not JSON" };
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return { ok: false, reason: "not a JSON object" };
  const obj = json as Record<string, unknown>;
  const kind = KINDS.find((k) => k in obj);
  if (!kind) return { ok: false, reason: `no DEVICE, PLUGIN, UNPLUG, ACK or ERROR key in ${Object.keys(obj).join(",") || "{}"}` };
  const list = obj[kind];
  if (!Array.isArray(list)) return { ok: false, reason: `${kind} is not an array` };
  if (kind === "ERROR") {
    const codes = list.map((e) => (typeof e === "object" && e !== null ? Number((e as { CODE?: unknown }).CODE) : Number.NaN));
    if (codes.some((c) => !Number.isInteger(c))) return { ok: false, reason: "ERROR entries need an integer CODE" };
    return { ok: true, frame: { kind, codes } };
  }
  const devices: NodeDevice[] = [];
  for (const [i, e] of list.entries()) {
    const d = toDevice(e, kind === "DEVICE" || kind === "ACK");
    if (typeof d === "string") return { ok: false, reason: `${kind}[${i}]: ${d}` };
    devices.push(d);
  }
  return { ok: true, frame: { kind, devices } };
}

function toDevice(e: unknown, needDA: boolean): NodeDevice | string {
  if (typeof e !== "object" || e === null) return "not an object";
  const o = e as Record<string, unknown>;
  const G = typeof o.G === "number" && Number.isInteger(o.G) && o.G >= 0 ? String(o.G) : o.G;
  if (typeof G !== "string" || !isPort(G)) return "G must be 1-32 alphanumerics";
  const V = Number(o.V);
  const D = Number(o.D);
  if (!Number.isInteger(V) || V < 0) return "V must be a whole number";
  if (!Number.isInteger(D) || D < 0) return "D must be a whole number";
  let DA: string | undefined;
  if (typeof o.DA === "string") DA = o.DA;
  else if (typeof o.DA === "number" && Number.isFinite(o.DA)) DA = String(o.DA);
  else if (typeof o.DA === "boolean") DA = o.DA ? "1" : "0";
  else if (o.DA !== undefined && o.DA !== null) return "DA must be a string or a number";
  if (needDA && DA === undefined) return "DA is missing";
  return DA === undefined ? { G, V, D } : { G, V, D, DA };
}

/**
 * Longest command line the original firmware can read, bytes with its `\n`: 0.47 reads into a
 * 128-byte buffer, and a line that fills it has no room for its terminator (the firmware answers
 * ERROR 1 for it, and again for each further 128-byte chunk).
 */
export const FIRMWARE_LINE_BYTES = 127;
/** Longest DA the original firmware 0.47 holds, characters (a 64-byte buffer with its terminator). */
export const FIRMWARE_DA_CHARS = 63;

/** Why a firmware could not take this command (null when it can), under the given limits. */
export function commandProblem(
  cmd: { G: string; V: number; D: number; DA: string },
  limits: { maxLineBytes?: number; maxDaChars?: number } = {},
): string | null {
  const maxDa = limits.maxDaChars ?? FIRMWARE_DA_CHARS;
  if (cmd.DA.length > maxDa) return `a DA of ${cmd.DA.length} characters, the firmware holds at most ${maxDa}`;
  const bytes = Buffer.byteLength(encodeCommand(cmd));
  const maxLine = limits.maxLineBytes ?? FIRMWARE_LINE_BYTES;
  if (bytes > maxLine) return `a line of ${bytes} bytes, the firmware reads at most ${maxLine}`;
  return null;
}

/** One command line for the firmware, `\n`-terminated. */
export function encodeCommand(d: { G: string; V: number; D: number; DA: string }): string {
  return `${JSON.stringify({ DEVICE: [{ G: d.G, V: d.V, D: d.D, DA: d.DA }] })}\n`;
}

/** One line as the firmware writes it (the fake firmware of the tests and the simulator use it). */
export function encodeNodeFrame(frame: SerialFrame): string {
  if (frame.kind === "ERROR") return `${JSON.stringify({ ERROR: frame.codes.map((CODE) => ({ CODE })) })}\r\n`;
  return `${JSON.stringify({ [frame.kind]: frame.devices })}\r\n`;
}

/**
 * Splits a byte stream into lines. Keeps at most MAX_LINE characters of an unfinished line: beyond
 * that the line is garbage and is cut, so noise without newlines cannot grow memory.
 */
export class LineSplitter {
  private buf = "";
  private overflow = false;

  /** Feeds a chunk; calls `line` for each complete line and `garbage` for each cut one. */
  push(chunk: string, line: (l: string) => void, garbage: (reason: string) => void): void {
    this.buf += chunk;
    let nl = this.buf.indexOf("\n");
    while (nl !== -1) {
      const l = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      if (this.overflow) {
        this.overflow = false;
        garbage(`line longer than ${MAX_LINE} characters`);
      } else line(l.endsWith("\r") ? l.slice(0, -1) : l);
      nl = this.buf.indexOf("\n");
    }
    if (this.buf.length > MAX_LINE) {
      this.buf = "";
      this.overflow = true;
    }
  }
}
