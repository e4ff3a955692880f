/**
 * Replay of a gateway recording (`blockkit gateway --record FILE`): JSON lines of frames received
 * from hardware, `{"t": epoch ms, "link": "serial"|"mqtt", "frame": …, "topic"?: …}`. A serial
 * frame is the Ninja line (as text or already parsed: `{"DEVICE":[{G,V,D,DA}]}`, `PLUGIN`,
 * `UNPLUG`); an MQTT frame is the payload text with its `topic` (or `{topic, payload}`). The
 * readings go through a real BlockAgent as one virtual block, at the recorded pace (× speed).
 */
import type { Reading } from "../gateway/agent/index.js";

export interface ReplayEntry {
  /** Offset from the first frame, ms. */
  at: number;
  link: string;
  readings: Reading[];
}

export interface Recording {
  entries: ReplayEntry[];
  /** `line N: problem` for lines that were skipped. */
  problems: string[];
  readings: number;
}

function toReading(o: unknown, kind: Reading["kind"], typeName?: string): Reading | null {
  if (o === null || typeof o !== "object") return null;
  const r = o as Record<string, unknown>;
  const G = typeof r.G === "number" ? String(r.G) : r.G;
  const V = Number(r.V ?? 0);
  const D = Number(r.D);
  if (typeof G !== "string" || !/^[A-Za-z0-9]{1,32}$/.test(G) || !Number.isInteger(V) || !Number.isInteger(D)) return null;
  if (kind === "config") return { G, V, D, DA: typeName ?? "CONFIG", kind };
  const DA = typeof r.DA === "number" ? String(r.DA) : r.DA;
  if (typeof DA !== "string") return null;
  return { G, V, D, DA, kind };
}

/** Readings of a Ninja serial frame (object); ACK and ERROR frames carry none. */
export function serialReadings(frame: Record<string, unknown>): Reading[] {
  const out: Reading[] = [];
  for (const [key, kind] of [["DEVICE", "data"], ["PLUGIN", "config"], ["UNPLUG", "config"]] as const) {
    const list = frame[key];
    if (!Array.isArray(list)) continue;
    for (const item of list) {
      const r = toReading(item, kind, key);
      if (r) out.push(r);
    }
  }
  return out;
}

/** The reading of an MQTT node message: `<prefix>/<G>_<V>_<D>/<data|heartbeat|config>`. */
export function mqttReading(topic: string, payload: string): Reading | null {
  const m = /(?:^|\/)([A-Za-z0-9]{1,32})_(\d{1,9})_(\d{1,9})\/(data|heartbeat|config)$/.exec(topic);
  if (!m) return null;
  let value = payload.trim();
  if (value.startsWith("{")) {
    try {
      const o = JSON.parse(value) as Record<string, unknown>;
      const v = m[4] === "config" ? (o.type ?? o.DA) : o.DA;
      if (typeof v === "string" || typeof v === "number") value = String(v);
    } catch {
      // Not JSON after all: the text is the value.
    }
  }
  if (value.length === 0) return null;
  return { G: m[1] as string, V: Number(m[2]), D: Number(m[3]), DA: value, kind: m[4] as Reading["kind"] };
}

function entryReadings(o: Record<string, unknown>): Reading[] | string {
  let frame = o.frame;
  const topic = typeof o.topic === "string" ? o.topic : undefined;
  if (frame !== null && typeof frame === "object" && typeof (frame as { topic?: unknown }).topic === "string") {
    const f = frame as { topic: string; payload?: unknown };
    const r = mqttReading(f.topic, typeof f.payload === "string" ? f.payload : JSON.stringify(f.payload ?? ""));
    return r ? [r] : "not a node topic";
  }
  if (topic !== undefined) {
    const r = mqttReading(topic, typeof frame === "string" ? frame : JSON.stringify(frame));
    return r ? [r] : "not a node topic";
  }
  if (typeof frame === "string") {
    try {
      frame = JSON.parse(frame);
    } catch {
      return "frame is not a JSON serial frame";
    }
  }
  if (frame === null || typeof frame !== "object") return "frame must be an object or a JSON string";
  return serialReadings(frame as Record<string, unknown>);
}

/** Parses a recording; lines that cannot be used are listed, not fatal. */
export function parseRecording(text: string): Recording {
  const entries: ReplayEntry[] = [];
  const problems: string[] = [];
  let first: number | null = null;
  let readings = 0;
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === "") return;
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch {
      problems.push(`line ${i + 1}: not JSON`);
      return;
    }
    if (o === null || typeof o !== "object") return void problems.push(`line ${i + 1}: not an object`);
    const rec = o as Record<string, unknown>;
    if (typeof rec.t !== "number" || !Number.isFinite(rec.t)) return void problems.push(`line ${i + 1}: t must be epoch ms`);
    const got = entryReadings(rec);
    if (typeof got === "string") return void problems.push(`line ${i + 1}: ${got}`);
    if (got.length === 0) return;
    first ??= rec.t;
    entries.push({ at: Math.max(0, rec.t - first), link: typeof rec.link === "string" ? rec.link : "replay", readings: got });
    readings += got.length;
  });
  entries.sort((a, b) => a.at - b.at);
  return { entries, problems, readings };
}
