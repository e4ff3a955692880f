/**
 * In-memory Outbox and TokenStore: same contract as the durable ones, nothing survives the process.
 * The simulator uses them for its virtual blocks; tests use them for agent logic.
 */
import {
  DEFAULT_OUTBOX_LIMITS,
  type NewOutboxEntry,
  type OutboxEntry,
  type OutboxLimits,
  type OutboxStats,
  type RestorableOutbox,
  type TokenStore,
} from "./types.js";

export function entryBytes(e: NewOutboxEntry): number {
  return e.G.length + e.DA.length + (e.value?.length ?? 0) + e.key.length;
}

/** What peek() returns when nothing waits: one frozen empty array (callers only read a batch). */
const NOTHING = Object.freeze([]) as unknown as OutboxEntry[];

/** Hears which entries were acknowledged and when (the simulator times ingest with it). */
export type AckListener = (entries: OutboxEntry[], now: number) => void;

export class MemoryOutbox implements RestorableOutbox {
  /**
   * The entries waiting are entries[head..tail). Slots outside are undefined, and the array is
   * kept when it empties (only head and tail go back to 0): a block sending one reading at a time
   * would otherwise drop the array's store after each acknowledgement and make a new one for the
   * next reading.
   */
  private entries: OutboxEntry[] = [];
  private head = 0;
  private tail = 0;
  private nextId = 1;
  private bytes = 0;
  private dropped = 0;
  private readonly limits: OutboxLimits;

  constructor(
    limits: Partial<OutboxLimits> = {},
    private readonly onAck?: AckListener,
    private readonly clock: () => number = Date.now,
  ) {
    this.limits = { ...DEFAULT_OUTBOX_LIMITS, ...limits };
  }

  append(entries: NewOutboxEntry[]): number {
    for (const e of entries) {
      this.entries[this.tail++] = { id: this.nextId++, kind: e.kind, G: e.G, V: e.V, D: e.D, DA: e.DA, value: e.value, ts: e.ts, key: e.key };
      this.bytes += entryBytes(e);
    }
    let dropped = 0;
    while (this.size() > 0 && (this.size() > this.limits.maxRows || this.bytes > this.limits.maxBytes)) {
      this.shift();
      dropped++;
    }
    this.dropped += dropped;
    this.compact();
    return dropped;
  }

  reserve(): number {
    return this.nextId++;
  }

  restore(entry: OutboxEntry): void {
    // Entries appended since its reserve() have higher ids: it goes before them (most often first).
    let at = this.tail;
    while (at > this.head && (this.entries[at - 1] as OutboxEntry).id > entry.id) at--;
    if (at === this.head && this.head > 0) this.entries[--this.head] = entry;
    else {
      this.entries.splice(at, 0, entry);
      this.tail++;
    }
    this.bytes += entryBytes(entry);
  }

  peek(limit: number, afterId = 0): OutboxEntry[] {
    let from = this.head;
    while (from < this.tail && (this.entries[from] as OutboxEntry).id <= afterId) from++;
    // Nothing to send (an uplink looks after every answer): no new array for it.
    if (from >= this.tail) return NOTHING;
    return this.entries.slice(from, Math.min(from + limit, this.tail));
  }

  ack(ids: number[]): void {
    const acked: OutboxEntry[] = [];
    // Acknowledged entries are almost always the oldest ones, in order: shift them off cheaply.
    let k = 0;
    while (k < ids.length && this.size() > 0 && (this.entries[this.head] as OutboxEntry).id === ids[k]) {
      acked.push(this.entries[this.head] as OutboxEntry);
      this.shift();
      k++;
    }
    if (k < ids.length) this.ackRest(new Set(k === 0 ? ids : ids.slice(k)), acked);
    this.compact();
    if (this.onAck && acked.length > 0) this.onAck(acked, this.clock());
  }

  private ackRest(gone: Set<number>, acked: OutboxEntry[]): void {
    while (this.size() > 0 && gone.has((this.entries[this.head] as OutboxEntry).id)) {
      const e = this.entries[this.head] as OutboxEntry;
      gone.delete(e.id);
      acked.push(e);
      this.shift();
    }
    if (gone.size === 0) return;
    const keep: OutboxEntry[] = [];
    for (let i = this.head; i < this.tail; i++) {
      const e = this.entries[i] as OutboxEntry;
      if (gone.has(e.id)) {
        acked.push(e);
        this.bytes -= entryBytes(e);
      } else keep.push(e);
    }
    this.entries = keep;
    this.head = 0;
    this.tail = keep.length;
  }

  /** Entries waiting to be acknowledged. */
  get rows(): number {
    return this.size();
  }

  expire(now: number): number {
    const cutoff = now - this.limits.maxAgeMs;
    let n = 0;
    while (this.size() > 0 && (this.entries[this.head] as OutboxEntry).ts < cutoff) {
      this.shift();
      n++;
    }
    this.dropped += n;
    this.compact();
    return n;
  }

  stats(): OutboxStats {
    return { rows: this.size(), bytes: this.bytes, dropped: this.dropped };
  }

  close(): void {
    this.entries = [];
    this.head = 0;
    this.tail = 0;
    this.bytes = 0;
  }

  private size(): number {
    return this.tail - this.head;
  }

  private shift(): void {
    this.bytes -= entryBytes(this.entries[this.head] as OutboxEntry);
    // Let go of the entry now: ten thousand outboxes holding their sent entries until the next
    // compaction kept them alive long enough to be promoted, and the old-generation GC paid.
    (this.entries as (OutboxEntry | undefined)[])[this.head] = undefined;
    this.head++;
  }

  private compact(): void {
    if (this.head === this.tail) {
      // Empty: the slots are undefined already; a backlog's large array goes.
      if (this.entries.length > 1024) this.entries = [];
      this.head = 0;
      this.tail = 0;
    } else if (this.head > 1024 && this.head * 2 > this.tail) {
      this.entries = this.entries.slice(this.head, this.tail);
      this.tail -= this.head;
      this.head = 0;
    }
  }
}

export class MemoryTokenStore implements TokenStore {
  constructor(
    private token: string | null = null,
    /** Hears each saved token (an activation). */
    private readonly saved: (token: string) => void = () => {},
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
