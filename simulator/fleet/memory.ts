/**
 * The simulator's seams of the BlockAgent: the gateway's in-memory outbox and token store, set up
 * so that every reading is timed from submission to the server's acknowledgement (the ingest
 * latency). Ten thousand blocks hold their readings and tokens in memory, not in database files.
 */
import { type AckListener, MemoryOutbox, MemoryTokenStore } from "../../gateway/agent/memory.js";

export type { AckListener };

export class MeasuredOutbox extends MemoryOutbox {
  constructor(
    onAck: AckListener,
    /** Most readings kept per block; the oldest are dropped past it. */
    maxRows = 100_000,
    /** Readings older than this are dropped by expire(), ms. */
    maxAgeMs = 24 * 3_600_000,
    clock: () => number = Date.now,
  ) {
    super({ maxRows, maxBytes: Number.POSITIVE_INFINITY, maxAgeMs }, onAck, clock);
  }
}

/** A block token held in memory; `saved` reports each activation. */
export class SimTokenStore extends MemoryTokenStore {
  constructor(saved: (token: string) => void = () => {}, token: string | null = null) {
    super(token, saved);
  }
}
