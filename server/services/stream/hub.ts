/**
 * The live stream's fan-out in one server process: the sockets open here, grouped by user. A user's
 * bus channel is subscribed while that user has a socket on this process, so a networked bus listens
 * only where someone is watching. Each bus message is parsed once and handed to every socket of the
 * user; a socket bounds its own send buffer (server/http/stream.ts). One timer pings every socket.
 */
import type { Logger } from "pino";
import { STREAM_PING_MS, type StreamEvent } from "../../../protocol/stream.js";
import { type Bus, STREAM_AWAITING_CHANNEL, streamChannel } from "../../bus/types.js";
import { ServiceError } from "../../errors.js";

/** One open socket as the hub sees it. */
export interface StreamSink {
  readonly userId: number;
  /** The client's address (unclaimed blocks awaiting activation from it are shown to it); null: unknown, shown none. */
  readonly address: string | null;
  /** Frames with their JSON text, in order; the sink filters and sends. */
  deliver(frames: readonly StreamEvent[], texts: readonly string[]): void;
  /** Called every ping interval: ping, or close a socket that did not answer the last ping. */
  heartbeat(): void;
  /** Closes the socket (server stopping). */
  close(code: number, reason: string): void;
}

export interface StreamHubOptions {
  /** Sockets one user may hold open on one server process. Default 10. */
  maxPerUser?: number;
  /** Sockets on one server process. Default 10 000. */
  maxTotal?: number;
  /** Ping interval, ms. Default 30 000. */
  pingMs?: number;
  /** Bytes a socket may have waiting to be sent before frames to it are dropped. Default 256 KiB. */
  maxBufferedBytes?: number;
}

interface UserEntry {
  sinks: Set<StreamSink>;
  unsubscribe: () => void;
}

export class StreamHub {
  private readonly users = new Map<number, UserEntry>();
  private total = 0;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribeAwaiting: (() => void) | null = null;
  private stopped = false;
  readonly maxBufferedBytes: number;
  /** Counters for tests and metrics. */
  readonly stats = { opened: 0, refused: 0, dropped: 0, frames: 0, maxBuffered: 0 };

  constructor(
    private readonly bus: Bus,
    private readonly log: Logger,
    private readonly options: StreamHubOptions = {},
  ) {
    this.maxBufferedBytes = options.maxBufferedBytes ?? 256 * 1024;
  }

  start(): void {
    this.timer = setInterval(() => {
      for (const u of this.users.values()) for (const s of u.sinks) s.heartbeat();
    }, this.options.pingMs ?? STREAM_PING_MS);
    this.timer.unref();
  }

  /** Closes every socket (1001: going away) and drops the subscriptions. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const u of [...this.users.values()]) for (const s of [...u.sinks]) s.close(1001, "server stopping");
    for (const u of this.users.values()) u.unsubscribe();
    this.users.clear();
    this.unsubscribeAwaiting?.();
    this.unsubscribeAwaiting = null;
    this.total = 0;
  }

  get sockets(): number {
    return this.total;
  }

  /** Throws 429 when the user or the process is at its cap (Retry-After: one ping interval), 503 when stopping. */
  check(userId: number): void {
    if (this.stopped) throw new ServiceError("UNAVAILABLE", "the server is shutting down");
    const mine = this.users.get(userId)?.sinks.size ?? 0;
    const perUser = this.options.maxPerUser ?? 10;
    if (mine >= perUser || this.total >= (this.options.maxTotal ?? 10_000)) {
      this.stats.refused++;
      throw new ServiceError(
        "RATE_LIMITED",
        mine >= perUser ? `you have ${perUser} live streams open, the most allowed: close one first` : "this server has as many live streams open as it allows",
        // A socket whose client is gone is closed within two ping intervals: ask again after one.
        { retryAfterS: Math.max(1, Math.ceil((this.options.pingMs ?? STREAM_PING_MS) / 1000)) },
      );
    }
  }

  /** Registers an open socket; returns the function that removes it. */
  attach(sink: StreamSink): () => void {
    this.check(sink.userId);
    let entry = this.users.get(sink.userId);
    if (!entry) {
      const unsubscribe = this.bus.subscribe(streamChannel(sink.userId), (m) => this.dispatch(sink.userId, m));
      entry = { sinks: new Set(), unsubscribe };
      this.users.set(sink.userId, entry);
    }
    entry.sinks.add(sink);
    this.total++;
    this.stats.opened++;
    this.unsubscribeAwaiting ??= this.bus.subscribe(STREAM_AWAITING_CHANNEL, (m) => this.awaiting(m));
    let attached = true;
    return () => {
      if (!attached) return;
      attached = false;
      this.total--;
      const e = this.users.get(sink.userId);
      if (!e) return;
      e.sinks.delete(sink);
      if (e.sinks.size > 0) return;
      e.unsubscribe();
      this.users.delete(sink.userId);
      if (this.users.size === 0) {
        this.unsubscribeAwaiting?.();
        this.unsubscribeAwaiting = null;
      }
    };
  }

  private dispatch(userId: number, message: string): void {
    const sinks = this.users.get(userId)?.sinks;
    if (!sinks || sinks.size === 0) return;
    let frames: StreamEvent[];
    try {
      frames = JSON.parse(message) as StreamEvent[];
      if (!Array.isArray(frames)) throw new TypeError("not an array");
    } catch (err) {
      this.log.warn({ err, userId }, "a stream message on the bus is not a JSON array: dropped");
      return;
    }
    const texts = frames.map((f) => JSON.stringify(f));
    this.stats.frames += frames.length * sinks.size;
    for (const s of [...sinks]) s.deliver(frames, texts);
  }

  /** An unclaimed block awaits activation: shown to sockets opened from the same address. */
  private awaiting(message: string): void {
    let m: { nodeId?: unknown; address?: unknown };
    try {
      m = JSON.parse(message) as typeof m;
    } catch {
      return;
    }
    if (typeof m.nodeId !== "string" || typeof m.address !== "string") return;
    const frame: StreamEvent = { type: "block", nodeId: m.nodeId, change: "awaiting" };
    const text = JSON.stringify(frame);
    for (const u of this.users.values()) {
      for (const s of u.sinks) if (s.address !== null && s.address === m.address) s.deliver([frame], [text]);
    }
  }
}
