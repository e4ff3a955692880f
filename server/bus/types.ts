/**
 * The Bus wakes waiters across server processes: held long-polls, activation requests, snapshot
 * waiters, and carries the live stream's events. In one process it is an in-memory fan-out; a
 * scale-out deployment swaps in a networked implementation behind the same interface.
 *
 * Channels in use: `commands` (node ids), `act:<nodeId>`, `cam:<deviceId>`, `rules:changed`,
 * `stream:<userId>` and `stream:awaiting` (see STREAM_* below). Channel names are at most 64 ASCII
 * characters; messages are UTF-8 text of at most BUS_MESSAGE_MAX bytes, so that every message fits
 * one PostgreSQL NOTIFY payload (8000 bytes) as it is.
 */
export type BusHandler = (message: string) => void;

/** Largest message in bytes of UTF-8 that a publisher may hand to the bus. */
export const BUS_MESSAGE_MAX = 7_500;

/**
 * The live stream of one user (server/services/stream): each message is a JSON array of
 * `StreamEvent` objects (protocol/stream.ts) in the order they happened.
 */
export function streamChannel(userId: number): string {
  return `stream:${userId}`;
}

/**
 * Unclaimed blocks that started awaiting activation: each message is JSON
 * `{"nodeId": "...", "address": "<the block's client address>"}`.
 */
export const STREAM_AWAITING_CHANNEL = "stream:awaiting";

export interface Bus {
  /**
   * Delivers `message` to every subscriber of `channel` in every process (this one included). A
   * wake-up signal: state lives in the store, and a subscriber re-reads it. The live stream's
   * channels are the exception: they carry the events themselves, and a message lost (a reconnect)
   * is a frame its watchers miss, which they tolerate.
   */
  publish(channel: string, message: string): void;
  /** Returns the function that unsubscribes. */
  subscribe(channel: string, handler: BusHandler): () => void;
  /**
   * A networked Bus calls these after it reconnected: messages sent meanwhile are lost, so each
   * holder of state derived from them (caches, waiters) re-reads it. Absent on an in-process Bus.
   */
  onResync?(handler: () => void): () => void;
  /**
   * False only when no process can be listening on the channel, so that a publisher may skip
   * building the message. A networked bus that cannot tell leaves it out (publishers then assume true).
   */
  hasSubscribers?(channel: string): boolean;
  close(): Promise<void>;
}
