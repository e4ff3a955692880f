/**
 * Publishes the live stream's events (protocol/stream.ts) on the Bus, one channel per user, so that
 * a socket on any server process hears them. Readings are published from the ingest's commit
 * listener, so after their durable commit, on both the fastify routes and the fast lane (they share
 * `Ingest`). Work is skipped for users nobody listens to when the bus can tell.
 */
import { deviceType } from "../../../protocol/device-types.js";
import { numericValue } from "../../../protocol/history.js";
import type { BlockChange, DeviceChange, StreamEvent } from "../../../protocol/stream.js";
import { BUS_MESSAGE_MAX, type Bus, STREAM_AWAITING_CHANNEL, streamChannel } from "../../bus/types.js";
import type { CommittedEvent } from "../ingest.js";

/** DA cut to this many characters when a data frame would not fit one bus message. */
const TRUNCATED_DA = 1000;

function shown(e: CommittedEvent): string | number {
  if (!deviceType(e.V, e.D).numeric) return e.DA;
  return numericValue(e.DA) ?? e.DA;
}

/** The frame as JSON, cut down when it alone would exceed a bus message. */
function encode(f: StreamEvent): string {
  const text = JSON.stringify(f);
  if (Buffer.byteLength(text) + 2 <= BUS_MESSAGE_MAX) return text;
  if (f.type === "data" && typeof f.DA === "string") return JSON.stringify({ ...f, DA: f.DA.slice(0, TRUNCATED_DA), truncated: true });
  if (f.type === "config") return JSON.stringify({ ...f, config: { type: f.config.type }, truncated: true });
  return text;
}

export class StreamPublisher {
  /** Counters for tests and metrics. */
  readonly stats = { messages: 0, frames: 0 };

  constructor(private readonly bus: Bus) {}

  private listened(channel: string): boolean {
    return this.bus.hasSubscribers?.(channel) ?? true;
  }

  /** The ingest's commit listener: data, heartbeat and config frames, and `created` device frames. */
  readonly onCommitted = (events: CommittedEvent[]): void => {
    let byUser: Map<number, StreamEvent[]> | undefined;
    for (const e of events) {
      if (!this.listened(streamChannel(e.userId))) continue;
      byUser ??= new Map();
      let frames = byUser.get(e.userId);
      if (!frames) byUser.set(e.userId, (frames = []));
      if (e.created) frames.push({ type: "device", guid: e.guid, change: "created" });
      if (e.kind === "config") frames.push({ type: "config", guid: e.guid, config: e.payload ?? { type: e.DA }, timestamp: e.ts });
      else frames.push({ type: "data", guid: e.guid, DA: shown(e), timestamp: e.ts });
    }
    if (byUser) for (const [userId, frames] of byUser) this.publish(userId, frames);
  };

  device(userId: number, guid: string, change: DeviceChange): void {
    this.publish(userId, [{ type: "device", guid, change }]);
  }

  block(userId: number, nodeId: string, change: BlockChange): void {
    this.publish(userId, [{ type: "block", nodeId, change }]);
  }

  /** A block nobody owns started awaiting activation from `address`. */
  awaiting(nodeId: string, address: string): void {
    if (!this.listened(STREAM_AWAITING_CHANNEL)) return;
    this.bus.publish(STREAM_AWAITING_CHANNEL, JSON.stringify({ nodeId, address }));
  }

  rule(userId: number, rid: number, ok: boolean, timestamp: number): void {
    this.publish(userId, [{ type: "rule", rid, ok, timestamp }]);
  }

  /** Publishes frames of one user in order, packed into as few bus messages as fit. */
  publish(userId: number, frames: StreamEvent[]): void {
    const channel = streamChannel(userId);
    if (frames.length === 0 || !this.listened(channel)) return;
    let parts: string[] = [];
    let size = 2;
    const flush = (): void => {
      if (parts.length === 0) return;
      this.bus.publish(channel, `[${parts.join(",")}]`);
      this.stats.messages++;
      parts = [];
      size = 2;
    };
    for (const f of frames) {
      const text = encode(f);
      const bytes = Buffer.byteLength(text) + 1;
      if (size + bytes > BUS_MESSAGE_MAX) flush();
      parts.push(text);
      size += bytes;
      this.stats.frames++;
    }
    flush();
  }
}
