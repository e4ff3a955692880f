/**
 * The simulator's in-memory implementations of the BlockAgent's seams: an outbox that times every
 * reading from submission to the server's acknowledgement (the ingest latency), and a token store.
 * Ten thousand blocks hold their readings and tokens in memory, not in ten thousand database files.
 */
import type { NewOutboxEntry, Outbox, OutboxEntry, OutboxStats, TokenStore } from "../../gateway/agent/index.js";

export interface AckListener {
  /** `entries` were acknowledged at `now` (their `ts` is when they were submitted). */
  (entries: OutboxEntry[], now: number): void;
}

const size = (e: NewOutboxEntry): number => e.G.length + e.DA.length + (e.value?.length ?? 0) + e.key.length;

export class MeasuredOutbox implements Outbox {
  private entries: OutboxEntry[] = [];
  private head = 0;
  private nextId = 1;
  private bytes = 0;
  private dropped = 0;

  constructor(
    private readonly onAck: AckListener,
    /** Most readings kept per block; the oldest are dropped past it. */
    private readonly maxRows = 100_000,
    /** Readings older than this are dropped by expire(), ms. */
    private readonly maxAgeMs = 24 * 3_600_000,
    private readonly clock: () => number = Date.now,
  ) {}

  append(entries: NewOutboxEntry[]): number {
    for (const e of entries) {
      this.entries.push({ ...e, id: this.nextId++ });
      this.bytes += size(e);
    }
    let dropped = 0;
    while (this.rows > this.maxRows) {
      this.bytes -= size(this.entries[this.head] as OutboxEntry);
      this.head++;
      dropped++;
    }
    this.dropped += dropped;
    this.compact();
    return dropped;
  }

  peek(limit: number): OutboxEntry[] {
    return this.entries.slice(this.head, this.head + limit);
  }

  ack(ids: number[]): void {
    const gone = new Set(ids);
    const acked: OutboxEntry[] = [];
    // The uplink acknowledges the oldest entries, in order: take them off the front.
    while (this.rows > 0 && gone.has((this.entries[this.head] as OutboxEntry).id)) {
      const e = this.entries[this.head] as OutboxEntry;
      gone.delete(e.id);
      acked.push(e);
      this.bytes -= size(e);
      this.head++;
    }
    if (gone.size > 0) {
      const keep: OutboxEntry[] = [];
      for (let i = this.head; i < this.entries.length; i++) {
        const e = this.entries[i] as OutboxEntry;
        if (gone.has(e.id)) {
          acked.push(e);
          this.bytes -= size(e);
        } else keep.push(e);
      }
      this.entries = keep;
      this.head = 0;
    }
    this.compact();
    if (acked.length > 0) this.onAck(acked, this.clock());
  }

  expire(now: number): number {
    let n = 0;
    while (this.rows > 0 && (this.entries[this.head] as OutboxEntry).ts < now - this.maxAgeMs) {
      this.bytes -= size(this.entries[this.head] as OutboxEntry);
      this.head++;
      n++;
    }
    this.dropped += n;
    this.compact();
    return n;
  }

  stats(): OutboxStats {
    return { rows: this.rows, bytes: this.bytes, dropped: this.dropped };
  }

  close(): void {
    this.entries = [];
    this.head = 0;
    this.bytes = 0;
  }

  get rows(): number {
    return this.entries.length - this.head;
  }

  private compact(): void {
    if (this.head > 256 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }
}

/** A block token held in memory; `saved` reports each activation. */
export class SimTokenStore implements TokenStore {
  constructor(
    private readonly saved: (token: string) => void = () => {},
    private token: string | null = null,
  ) {}

  load(): Promise<string | null> {
    return Promise.resolve(this.token);
  }

  save(token: string): Promise<void> {
    this.token = token;
    this.saved(token);
    return Promise.resolve();
  }

  clear(): Promise<void> {
    this.token = null;
    return Promise.resolve();
  }
}
