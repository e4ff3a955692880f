/**
 * The ingest thread: block events are committed by a worker thread with a connection of its own
 * (ingest-worker.ts), so that the SQLite statements, the COMMIT and the WAL flush run beside the
 * event loop instead of on it. The event loop writes each batch into shared memory
 * (ingest-channel.ts) and gets the results once the batch is durable. Measured on the ingest
 * benchmark, these were a third of the main thread's time per event; the load generator leaves the
 * second core half idle, and the worker uses it.
 *
 * What keeps the two connections consistent:
 *  - the worker looks every device up inside its write transaction (it keeps no GUID cache), so a
 *    device the main thread deleted is created again, as on the main thread;
 *  - deleting a device or a block also deletes its staged rows in the same transaction;
 *  - readers move staged rows first (ReadingsStaging with `stagedElsewhere`);
 *  - each write transaction holds SQLite's write lock, so the two never interleave inside one; the
 *    worker flushes the WAL after its COMMIT, with the lock released.
 * A worker that fails makes every commit fail with 503 (nothing is acknowledged that was not
 * committed) and is logged; the store stays readable. Closing waits until every batch accepted is
 * answered, then ends the thread.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { unavailable } from "../../errors.js";
import type { IngestEvent, IngestResult } from "../types.js";
import { CLOSE, Channel, DONE, FREE, INGEST, INGEST_WAITS, MAIN, MAIN_WAITS, PUBLISHED, WRITER } from "./ingest-channel.js";

/** Bytes of events and number of events that can wait for the worker at once. */
const RING_BYTES = 8 << 20;
const SLOTS = 1 << 15;

interface Batch {
  events: IngestEvent[];
  now: number;
  /** Events written into the ring so far (a batch larger than the free space goes in pieces). */
  written: number;
  answered: number;
  results: IngestResult[];
  failed: boolean;
  resolve: (r: IngestResult[]) => void;
  reject: (err: unknown) => void;
}

/** A record in the ring whose events wait for their results. */
interface Sent {
  batch: Batch;
  count: number;
  start: number;
}

/**
 * The worker's module. Built: the compiled ingest-worker.js beside this file. From the sources
 * (tests, `tsx`): a bootstrap that registers tsx's loader in the worker (a worker thread does not
 * inherit the parent's) and then loads ingest-worker.ts itself, so tests exercise the source they
 * test, never a stale dist/.
 */
export function workerModule(): URL {
  const here = import.meta.url;
  if (!here.endsWith(".ts")) return new URL("./ingest-worker.js", here);
  const tsxDir = dirname(createRequire(here).resolve("tsx/package.json"));
  const api = pathToFileURL(join(tsxDir, "dist/esm/api/index.mjs")).href;
  const worker = new URL("./ingest-worker.ts", here).href;
  const code = `import { register } from ${JSON.stringify(api)}; register(); await import(${JSON.stringify(worker)});`;
  return new URL(`data:text/javascript,${encodeURIComponent(code)}`);
}

export class IngestThread {
  private readonly worker: Worker;
  private readonly channel: Channel;
  /** Batches not wholly written into the ring yet, oldest first. */
  private readonly waiting: Batch[] = [];
  private readonly sent: Sent[] = [];
  /** Where the next record goes; the oldest unanswered record's start bounds it when behind it. */
  private writeAt = 0;
  private unanswered = 0;
  private published = 0;
  private answered = 0;
  private watching = false;
  private broken: Error | null = null;
  private closing: Promise<void> | null = null;
  private idle: (() => void) | null = null;
  /**
   * The worker's thread id (Linux), once it has lowered its priority (ingest-worker.ts); null
   * elsewhere. Rejects when the worker fails or exits before it started (openStore fails loudly).
   */
  readonly started: Promise<number | null>;

  constructor(module: URL, file: string, onError: (err: Error) => void, ringBytes = RING_BYTES, slots = SLOTS) {
    this.channel = Channel.create(ringBytes, slots);
    this.worker = new Worker(module, { workerData: { file, memory: this.channel.memory } });
    let failStart: (err: Error) => void = () => undefined;
    this.started = new Promise((resolve, reject) => {
      failStart = reject;
      this.worker.once("message", (m: { tid: number | null }) => resolve(m.tid));
    });
    // Observed by openStore; a store opened otherwise must not crash on an unhandled rejection.
    this.started.catch(() => undefined);
    this.worker.on("error", (err) => {
      failStart(err);
      onError(err);
      this.fail(err);
    });
    this.worker.on("exit", (code) => {
      const err = new Error(`the ingest thread exited with code ${code}`);
      failStart(err);
      this.fail(err);
    });
  }

  /** Commits a batch on the worker; resolves once it is durable. `now`: this thread's clock. */
  commit(events: IngestEvent[], now: number): Promise<IngestResult[]> {
    if (this.broken) return Promise.reject(unavailable("the store's ingest thread failed; retry later", this.broken));
    if (this.closing) return Promise.reject(unavailable("the store is closing"));
    return new Promise((resolve, reject) => {
      this.waiting.push({ events, now, written: 0, answered: 0, results: [], failed: false, resolve, reject });
      if (this.waiting.length === 1) this.send();
    });
  }

  /** Waits for every batch accepted to be answered, then moves the worker's staged rows and ends it. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.waiting.length > 0 || this.sent.length > 0) await new Promise<void>((resolve) => (this.idle = resolve));
      if (this.broken) return;
      const exited = new Promise<void>((resolve) => this.worker.once("exit", () => resolve()));
      Atomics.store(this.channel.control, CLOSE, 1);
      Atomics.notify(this.channel.control, PUBLISHED);
      await exited;
    })();
    return this.closing;
  }

  /** Ends the thread at once, as a crash would (tests); commits fail with 503 from then on. */
  async terminate(): Promise<void> {
    await this.worker.terminate();
  }

  /** Writes waiting batches into the ring while there is room, and wakes the worker. */
  private send(): void {
    const before = this.published;
    while (this.waiting.length > 0) {
      const b = this.waiting[0] as Batch;
      if (!this.write(b)) break;
      if (b.written === b.events.length) this.waiting.shift();
    }
    if (this.published === before) return;
    Atomics.store(this.channel.control, PUBLISHED, this.published);
    Atomics.notify(this.channel.control, PUBLISHED);
    this.watch();
  }

  /** Writes the next record of `b`; false when there is no room until results come back. */
  private write(b: Batch): boolean {
    const max = this.channel.slots - this.unanswered;
    if (max === 0) return false;
    const size = this.channel.ring.length;
    const oldest = this.sent[0]?.start;
    // Free: from writeAt to the ring's end and from 0 to the oldest unanswered record, or from
    // writeAt to that record once the writer has wrapped around behind it.
    const ahead = oldest === undefined || this.writeAt > oldest;
    let at = this.writeAt;
    let r = this.channel.write(this.published, at, ahead ? size : (oldest as number), b.events, b.written, max, b.now);
    if (r.count === 0 && ahead && at > 0) {
      at = 0;
      r = this.channel.write(this.published, 0, oldest ?? size, b.events, b.written, max, b.now);
    }
    if (r.count === 0) {
      if (oldest === undefined) {
        // Not even an empty ring holds the next event: it can never be sent.
        this.waiting.shift();
        b.reject(new Error("a block event is larger than the ingest thread's buffer"));
        return true;
      }
      return false;
    }
    this.sent.push({ batch: b, count: r.count, start: at });
    this.writeAt = r.end;
    b.written += r.count;
    this.unanswered += r.count;
    this.published = (this.published + 1) | 0;
    return true;
  }

  /** Watches the worker's answer counter while records wait for their results. */
  private watch(): void {
    if (this.watching || this.sent.length === 0 || this.broken) return;
    const w = Atomics.waitAsync(this.channel.control, DONE, this.answered);
    this.watching = true;
    const collect = (): void => {
      this.watching = false;
      this.collect();
    };
    if (w.async) void w.value.then(collect);
    else queueMicrotask(collect);
  }

  /** Settles the batches whose records the worker answered, then sends what waited for room. */
  private collect(): void {
    if (this.broken) return;
    const done = Atomics.load(this.channel.control, DONE);
    while (this.answered !== done) {
      const s = this.sent.shift() as Sent;
      const b = s.batch;
      for (let i = 0; i < s.count; i++) {
        const r = this.channel.result((this.answered + i) | 0);
        if (r) b.results.push(r);
        else b.failed = true;
      }
      this.answered = (this.answered + s.count) | 0;
      this.unanswered -= s.count;
      b.answered += s.count;
      if (b.answered < b.events.length) continue;
      if (b.failed) b.reject(new Error(`the ingest thread could not commit: ${this.channel.errorMessage()}`));
      else b.resolve(b.results);
    }
    this.send();
    this.watch();
    if (this.idle && this.waiting.length === 0 && this.sent.length === 0) this.idle();
  }

  /**
   * Takes this thread's turn at SQLite's write lock from the ingest thread (ingest-channel.ts,
   * WRITER): at once when it is free, else once the ingest thread's transaction is over, before its
   * next one. Waits on the event loop, never in SQLite's busy handler. One caller at a time
   * (writer.ts queues them); releaseWriter() must follow.
   */
  async takeWriter(): Promise<void> {
    const c = this.channel.control;
    if (Atomics.compareExchange(c, WRITER, FREE, MAIN) === FREE) return;
    Atomics.store(c, MAIN_WAITS, 1);
    try {
      for (;;) {
        const w = Atomics.load(c, WRITER);
        if (w === MAIN) return;
        if (w === FREE && Atomics.compareExchange(c, WRITER, FREE, MAIN) === FREE) return;
        // Bounded: a lost wake-up costs this wait at most.
        const r = Atomics.waitAsync(c, WRITER, w, 1000);
        if (r.async) await r.value;
      }
    } finally {
      Atomics.store(c, MAIN_WAITS, 0);
    }
  }

  /** Gives the turn up: to the ingest thread when it waits for it, else free. */
  releaseWriter(): void {
    const c = this.channel.control;
    Atomics.store(c, WRITER, Atomics.load(c, INGEST_WAITS) === 1 && !this.broken ? INGEST : FREE);
    Atomics.notify(c, WRITER);
  }

  private fail(err: Error): void {
    this.broken ??= err;
    // A thread that ended in its turn (a crash, terminate()) gives it up with its connection.
    Atomics.store(this.channel.control, WRITER, FREE);
    Atomics.notify(this.channel.control, WRITER);
    const e = unavailable("the store's ingest thread failed; retry later", err);
    for (const s of this.sent) s.batch.reject(e);
    for (const b of this.waiting) b.reject(e);
    this.sent.length = 0;
    this.waiting.length = 0;
    this.idle?.();
  }
}
