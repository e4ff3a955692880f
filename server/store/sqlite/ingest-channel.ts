/**
 * The shared memory between the event loop and the ingest thread (ingest-thread.ts, ingest-worker.ts).
 * Posting each batch as a message cost the event loop a structured clone of every event object
 * (about 2.3 µs an event), and each answer a message of its own, with a wake-up of the other
 * thread's event loop on both sides. Here the event loop writes events into a ring of bytes in a
 * SharedArrayBuffer and bumps a counter; the ingest thread, which has nothing else to do, sleeps
 * on that counter (Atomics.wait), reads every record published meanwhile, commits and flushes them,
 * writes one result per event into a second shared array and bumps a second counter, which the
 * event loop watches with Atomics.waitAsync.
 *
 * Layout:
 *  - control (Int32): PUBLISHED (records written so far), DONE (events answered so far), CLOSE;
 *    counters wrap at 2^32 and are compared for equality only; WRITER, MAIN_WAITS and INGEST_WAITS,
 *    the turn at SQLite's write lock of the two connections (see below);
 *  - ring: records, each 8-byte aligned: u32 event count, u32 unused, f64 now, the events. A
 *    record follows the previous one, or starts again at 0 when the ring's end is too near. The
 *    writer only reuses bytes whose events have been answered, so the reader never sees them
 *    change;
 *  - offsets (Int32): where each record starts, at (record sequence number mod slots);
 *  - results (Int32): two per event, at (event sequence number mod slots, a power of two): device
 *    id and state (with a flag: its callback delivery outboxed);
 *  - error: the message of the last failed transaction (u32 length, UTF-8), for the rejections.
 * An event: u8 kind, u8 flags (num, key, meta patch, touch present, existing device only, evaluate,
 * cause present), f64 userId, V, D, num, ts, touch, then length-prefixed UTF-8 strings: node, guid,
 * G, DA, the key, the meta patch as JSON and the cause (rule ids joined by commas) when present (the config payload itself does not cross: the patch carries what the store needs).
 */
import type { IngestEvent, IngestResult, MetaPatch } from "../types.js";

export const PUBLISHED = 0;
export const DONE = 1;
export const CLOSE = 2;
/**
 * Which of the two connections may take SQLite's write lock: FREE, INGEST or MAIN. A side takes
 * it by compare-and-swap from FREE, or waits with its *_WAITS flag set; the side that gives it up
 * hands it straight to the other when that one waits (else FREE), and notifies WRITER. So neither
 * connection ever waits in SQLite's busy handler for the other, and when both want it they take
 * turns: the event loop's write goes in before the ingest thread's next batch, and a queue of such
 * writes lets a batch in between two (writer.ts).
 */
export const WRITER = 3;
export const MAIN_WAITS = 4;
export const INGEST_WAITS = 5;
export const FREE = 0;
export const INGEST = 1;
export const MAIN = 2;

/** Result states. */
const FOUND = 0;
const CREATED = 1;
const DUPLICATE = 2;
const FAILED = 3;
/** Flag on a state: the event's callback delivery was written to the outbox (IngestResult.outboxed). */
const OUTBOXED = 4;

const HEADER = 16;
const FIXED = 2 + 6 * 8;
const KINDS: IngestEvent["kind"][] = ["data", "heartbeat", "config"];
const HAS_NUM = 1;
const HAS_KEY = 2;
const HAS_META = 4;
const HAS_TOUCH = 8;
const EXISTING_ONLY = 16;
const EVALUATE = 32;
const HAS_CAUSE = 64;
const ERROR_BYTES = 1024;

export interface ChannelMemory {
  control: SharedArrayBuffer;
  ring: SharedArrayBuffer;
  offsets: SharedArrayBuffer;
  results: SharedArrayBuffer;
  error: SharedArrayBuffer;
}

/** Views over a ChannelMemory, on either side. */
export class Channel {
  readonly control: Int32Array;
  readonly ring: Buffer;
  readonly offsets: Int32Array;
  readonly results: Int32Array;
  readonly slots: number;
  private readonly error: Buffer;

  constructor(readonly memory: ChannelMemory) {
    this.control = new Int32Array(memory.control);
    this.ring = Buffer.from(memory.ring);
    this.offsets = new Int32Array(memory.offsets);
    this.results = new Int32Array(memory.results);
    this.slots = this.results.length / 2;
    this.error = Buffer.from(memory.error);
  }

  static create(ringBytes: number, slots: number): Channel {
    return new Channel({
      control: new SharedArrayBuffer(8 * 4),
      ring: new SharedArrayBuffer(ringBytes),
      offsets: new SharedArrayBuffer(slots * 4),
      results: new SharedArrayBuffer(slots * 2 * 4),
      error: new SharedArrayBuffer(ERROR_BYTES),
    });
  }

  /**
   * Writes events[from...] as record number `seq` at `at`: as many as fit before `limit`, at most
   * `max` (none when the first does not fit). Returns the count written and the offset after it.
   */
  write(seq: number, at: number, limit: number, events: IngestEvent[], from: number, max: number, now: number): { count: number; end: number } {
    const buf = this.ring;
    let pos = at + HEADER;
    let count = 0;
    const last = Math.min(events.length, from + max);
    for (let i = from; i < last; i++) {
      const end = writeEvent(buf, pos, limit, events[i] as IngestEvent);
      if (end < 0) break;
      pos = end;
      count++;
    }
    if (count === 0) return { count, end: at };
    buf.writeUInt32LE(count, at);
    buf.writeDoubleLE(now, at + 8);
    this.offsets[seq & (this.slots - 1)] = at;
    return { count, end: align(pos) };
  }

  /** Reads record number `seq`, appending its events; returns its `now`. */
  read(seq: number, into: IngestEvent[]): number {
    const buf = this.ring;
    const at = this.offsets[seq & (this.slots - 1)] as number;
    const count = buf.readUInt32LE(at);
    let pos = at + HEADER;
    for (let i = 0; i < count; i++) pos = readEvent(buf, pos, into);
    return buf.readDoubleLE(at + 8);
  }

  setResult(seq: number, r: IngestResult): void {
    const i = (seq & (this.slots - 1)) * 2;
    this.results[i] = r.deviceId;
    this.results[i + 1] = (r.duplicate ? DUPLICATE : r.created ? CREATED : FOUND) | (r.outboxed ? OUTBOXED : 0);
  }

  setFailed(seq: number): void {
    this.results[(seq & (this.slots - 1)) * 2 + 1] = FAILED;
  }

  /** The result of event `seq`, or null if its transaction failed. */
  result(seq: number): IngestResult | null {
    const i = (seq & (this.slots - 1)) * 2;
    const flags = this.results[i + 1] as number;
    const state = flags & 3;
    if (state === FAILED) return null;
    const r: IngestResult = { deviceId: this.results[i] as number, created: state === CREATED, duplicate: state === DUPLICATE };
    if (flags & OUTBOXED) r.outboxed = true;
    return r;
  }

  setError(message: string): void {
    const n = this.error.write(message, 4, ERROR_BYTES - 4);
    this.error.writeUInt32LE(n, 0);
  }

  errorMessage(): string {
    return this.error.toString("utf8", 4, 4 + this.error.readUInt32LE(0));
  }
}

const align = (n: number): number => (n + 7) & ~7;

/** Strings up to this length are copied by charCode when they are ASCII. */
const SHORT = 64;

/** Writes a length-prefixed string; -1 when it might not fit before `limit`. */
function writeString(buf: Buffer, pos: number, limit: number, s: string): number {
  const length = s.length;
  if (pos + 4 + length * 3 > limit) return -1;
  // Node ids, GUIDs, G and DA are short ASCII strings: copying them here costs less than a call
  // into buf.write (four per event on the event loop).
  if (length <= SHORT) {
    let i = 0;
    for (; i < length; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) break;
      buf[pos + 4 + i] = c;
    }
    if (i === length) {
      buf.writeUInt32LE(length, pos);
      return pos + 4 + length;
    }
  }
  const n = buf.write(s, pos + 4);
  buf.writeUInt32LE(n, pos);
  return pos + 4 + n;
}

function writeEvent(buf: Buffer, pos: number, limit: number, e: IngestEvent): number {
  if (pos + FIXED > limit) return -1;
  const meta = e.meta === undefined ? undefined : JSON.stringify(e.meta);
  const flags =
    (e.num === null ? 0 : HAS_NUM) | (e.key === undefined ? 0 : HAS_KEY) | (meta === undefined ? 0 : HAS_META) | (e.touch === undefined ? 0 : HAS_TOUCH) |
    (e.existingOnly ? EXISTING_ONLY : 0) | (e.evaluate ? EVALUATE : 0) | (e.cause?.length ? HAS_CAUSE : 0);
  buf[pos] = KINDS.indexOf(e.kind);
  buf[pos + 1] = flags;
  buf.writeDoubleLE(e.userId, pos + 2);
  buf.writeDoubleLE(e.V, pos + 10);
  buf.writeDoubleLE(e.D, pos + 18);
  buf.writeDoubleLE(e.num ?? 0, pos + 26);
  buf.writeDoubleLE(e.ts, pos + 34);
  buf.writeDoubleLE(e.touch ?? 0, pos + 42);
  pos += FIXED;
  pos = writeString(buf, pos, limit, e.node);
  if (pos >= 0) pos = writeString(buf, pos, limit, e.guid);
  if (pos >= 0) pos = writeString(buf, pos, limit, e.G);
  if (pos >= 0) pos = writeString(buf, pos, limit, e.DA);
  if (pos >= 0 && e.key !== undefined) pos = writeString(buf, pos, limit, e.key);
  if (pos >= 0 && meta !== undefined) pos = writeString(buf, pos, limit, meta);
  if (pos >= 0 && flags & HAS_CAUSE) pos = writeString(buf, pos, limit, (e.cause as readonly number[]).join(","));
  return pos;
}

function readEvent(buf: Buffer, pos: number, into: IngestEvent[]): number {
  const kind = KINDS[buf[pos] as number] as IngestEvent["kind"];
  const flags = buf[pos + 1] as number;
  const userId = buf.readDoubleLE(pos + 2);
  const V = buf.readDoubleLE(pos + 10);
  const D = buf.readDoubleLE(pos + 18);
  const num = flags & HAS_NUM ? buf.readDoubleLE(pos + 26) : null;
  const ts = buf.readDoubleLE(pos + 34);
  const touch = flags & HAS_TOUCH ? buf.readDoubleLE(pos + 42) : undefined;
  pos += FIXED;
  const next = (): string => {
    const n = buf.readUInt32LE(pos);
    const s = buf.toString("utf8", pos + 4, pos + 4 + n);
    pos += 4 + n;
    return s;
  };
  const node = next();
  const guid = next();
  const G = next();
  const DA = next();
  const key = flags & HAS_KEY ? next() : undefined;
  const meta = flags & HAS_META ? (JSON.parse(next()) as MetaPatch) : undefined;
  const existingOnly = flags & EXISTING_ONLY ? true : undefined;
  const evaluate = flags & EVALUATE ? true : undefined;
  const cause = flags & HAS_CAUSE ? next().split(",").map(Number) : undefined;
  into.push({ kind, userId, node, guid, G, V, D, DA, num, ts, key, meta, touch, existingOnly, evaluate, cause });
  return pos;
}
