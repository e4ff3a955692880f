/**
 * The seams of the BlockAgent: where readings wait (Outbox), where the block token lives
 * (TokenStore), and who actuates commands (CommandTarget). The gateway supplies a durable SQLite
 * outbox and a 0600 token file; the simulator supplies the in-memory ones of memory.ts.
 */
import type { Command } from "../../protocol/payloads.js";

/** How a reading leaves the outbox: `data` and `heartbeat` readings carry DA, `config` carries a type. */
export type ReadingKind = "data" | "heartbeat" | "config";

/** A reading as a link submits it. */
export interface Reading {
  G: string;
  V: number;
  D: number;
  /** The value (data/heartbeat) or the config type (config, e.g. `PLUGIN`). */
  DA: string;
  /** Default `data`. */
  kind?: ReadingKind;
  /** When it was read, epoch ms. Default: the agent's clock at submit. */
  ts?: number;
  /** Extra DA of a config event (e.g. the firmware version of a VERSION config). */
  value?: string;
}

/** A reading in the outbox: ordered by `id`, sent with `key` as its idempotency KEY. */
export interface OutboxEntry {
  id: number;
  kind: ReadingKind;
  G: string;
  V: number;
  D: number;
  DA: string;
  value: string | null;
  ts: number;
  key: string;
}

export type NewOutboxEntry = Omit<OutboxEntry, "id">;

/** Bounds of an outbox; the oldest entries are dropped (and counted) past any of them. */
export interface OutboxLimits {
  /** Most entries kept. Default 1 000 000. */
  maxRows: number;
  /** Most bytes of payload kept (G + DA + value + key). Default 256 MiB. */
  maxBytes: number;
  /** Entries older than this are dropped, ms. Default 30 days. */
  maxAgeMs: number;
}

export const DEFAULT_OUTBOX_LIMITS: OutboxLimits = {
  maxRows: 1_000_000,
  maxBytes: 256 * 2 ** 20,
  maxAgeMs: 30 * 86_400_000,
};

export interface OutboxStats {
  rows: number;
  bytes: number;
  /** Entries dropped to stay within the limits since the outbox was created (persisted when durable). */
  dropped: number;
  /** True while appends are refused (disk full or failing); a durable outbox only. */
  full?: boolean;
  /** Free bytes on the outbox's filesystem at the last measure; -1 before any (durable outbox only). */
  freeBytes?: number;
}

/**
 * An append stored nothing because the outbox cannot write now (the disk is full, below the reserve,
 * or failing). The readings must not be acknowledged to their node.
 */
export class OutboxFullError extends Error {
  override readonly name = "OutboxFullError";
}

/**
 * Durable FIFO of readings. Synchronous: an append returns once the entry is stored (the SQLite one
 * commits before returning), so a reading acknowledged to a link is never lost.
 */
export interface Outbox {
  /**
   * Stores the entries in order; applies the row/byte bounds (drop-oldest). Returns how many were
   * dropped. Throws OutboxFullError, storing nothing, when it cannot write.
   */
  append(entries: NewOutboxEntry[]): number;
  /** The oldest `limit` entries, in order, without removing them. */
  /** The oldest entries, up to `limit`, with an id above `afterId` (default 0: from the oldest). */
  peek(limit: number, afterId?: number): OutboxEntry[];
  /** Removes acknowledged entries. */
  ack(ids: number[]): void;
  /** Drops entries older than `now - maxAgeMs`; returns how many. */
  expire(now: number): number;
  stats(): OutboxStats;
  close(): void;
}

/**
 * An outbox that can take back an entry the uplink sent without storing it (the simulator's lean
 * path: BlockAgent's `lean` option, Uplink.sendLean): the in-memory one (memory.ts). Never the
 * gateway's: its readings are stored durably before they are acknowledged to their link.
 */
export interface RestorableOutbox extends Outbox {
  /** Entries waiting (what stats().rows says, without the object). */
  readonly rows: number;
  /** The id of an entry sent without being stored: below the id of every entry appended after. */
  reserve(): number;
  /**
   * Stores an entry of a reserve()d id whose send failed, in id order: before the entries appended
   * since. The bounds apply at the next append.
   */
  restore(entry: OutboxEntry): void;
}

/** Where the block token is kept between runs. */
export interface TokenStore {
  load(): Promise<string | null>;
  save(token: string): Promise<void>;
  clear(): Promise<void>;
}

/** Something that actuates commands: a hardware link (serial, MQTT) or a simulated one. */
export interface CommandTarget {
  /** Unique name, e.g. `serial`, `mqtt`. */
  readonly name: string;
  /** Whether the device is one of this link's (used when no reading has been seen from it yet). */
  owns(cmd: Command): boolean;
  /** Sends the command to the hardware; resolves once handed over (or acknowledged). */
  deliver(cmd: Command): Promise<void>;
}
