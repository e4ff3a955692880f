/**
 * Replay of a gateway recording (`blockkit gateway --record FILE`, gateway/daemon/record.ts): JSON
 * lines `{"t": epoch ms, "link": "serial", "frame": "<raw line>"}` and
 * `{"t": …, "link": "mqtt", "topic": "<topic>", "frame": "<payload text>"}`. Serial lines are decoded
 * with the gateway's frame codec, MQTT messages with its topic scheme; an already parsed frame
 * object (or `{topic, payload}`) is accepted too. The readings go through a real BlockAgent as one
 * virtual block, at the recorded pace (× speed).
 */
import type { Reading } from "../gateway/agent/index.js";
import { frameReadings } from "../gateway/links/serial-readings.js";
import { parseNodePayload, parseNodeTopic } from "../protocol/mqtt-topics.js";
import { decodeFrame } from "../protocol/serial-frames.js";

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

/**
 * Readings of a Ninja serial line: the gateway's own codec and meaning (gateway/links/serial-readings.ts),
 * so the firmware version lands where the gateway puts it (a VERSION config event on D 1003).
 */
export function serialReadings(line: string): Reading[] | string {
  const r = decodeFrame(line);
  if (!r.ok) return r.reason;
  return frameReadings(r.frame);
}

/** The reading of an MQTT node message `<prefix>/<G>_<V>_<D>/<data|heartbeat|config>` (the gateway's topic scheme). */
export function mqttReading(topic: string, payload: string): Reading | null {
  const prefix = topic.split("/").slice(0, -2).join("/");
  const t = parseNodeTopic(prefix, topic);
  if (!t) return null;
  const value = parseNodePayload(t.kind, Buffer.from(payload, "utf8"));
  if (value === null) return null;
  return { G: t.G, V: t.V, D: t.D, DA: value, kind: t.kind };
}

function entryReadings(o: Record<string, unknown>): Reading[] | string {
  let frame = o.frame;
  const topic = typeof o.topic === "string" ? o.topic : undefined;
  if (frame !== null && typeof frame === "object" && typeof (frame as { topic?: unknown }).topic === "string") {
    const f = frame as { topic: string; payload?: unknown };
    const r = mqttReading(f.topic, typeof f.payload === "string" ? f.payload : JSON.stringify(f.payload ?? ""));
    return r ? [r] : "not a node topic with a value";
  }
  if (topic !== undefined) {
    const r = mqttReading(topic, typeof frame === "string" ? frame : JSON.stringify(frame));
    return r ? [r] : "not a node topic with a value";
  }
  // A serial frame: the raw line as the gateway records it, or the frame already parsed.
  if (typeof frame !== "string") frame = JSON.stringify(frame ?? null);
  return serialReadings(frame as string);
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
    // The line is JSON; its frame is what is wrong, and the problem says so.
    if (typeof got === "string") {
      const what = typeof rec.topic === "string" || rec.link === "mqtt" ? "MQTT message" : "serial frame";
      const text = typeof rec.frame === "string" ? rec.frame : JSON.stringify(rec.frame ?? null);
      const shown = text.length > 40 ? `${text.slice(0, 40)}…` : text;
      return void problems.push(`line ${i + 1}: the ${what} ${JSON.stringify(shown)} is unusable (${got})`);
    }
    if (got.length === 0) return;
    first ??= rec.t;
    entries.push({ at: Math.max(0, rec.t - first), link: typeof rec.link === "string" ? rec.link : "replay", readings: got });
    readings += got.length;
  });
  entries.sort((a, b) => a.at - b.at);
  return { entries, problems, readings };
}
