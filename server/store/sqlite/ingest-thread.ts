/**
 * The ingest thread: block events are committed by a worker thread with a connection of its own
 * (ingest-worker.ts), so that the SQLite statements, the COMMIT and the WAL flush run beside the
 * event loop instead of on it. The main thread posts a batch and gets the results once the batch
 * is durable. Measured on the ingest benchmark, these were a third of the main thread's time per
 * event; the load generator leaves the second core half idle, and the worker uses it.
 *
 * What keeps the two connections consistent:
 *  - the worker looks every device up inside its write transaction (it keeps no GUID cache), so a
 *    device the main thread deleted is created again, as on the main thread;
 *  - deleting a device or a block also deletes its staged rows in the same transaction;
 *  - readers move staged rows first (ReadingsStaging with `stagedElsewhere`);
 *  - each write transaction holds SQLite's write lock, so the two never interleave inside one; the
 *    worker flushes the WAL after its COMMIT, with the lock released.
 * A worker that fails makes every commit fail with 503 (nothing is acknowledged that was not
 * committed) and is logged; the store stays readable.
 */
import { existsSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { unavailable } from "../../errors.js";
import type { IngestEvent, IngestResult } from "../types.js";

interface Pending {
  resolve: (r: IngestResult[]) => void;
  reject: (err: unknown) => void;
}

export type WorkerMessage = { type: "results"; id: number; results: IngestResult[] } | { type: "failed"; id: number; message: string };

/**
 * The worker's compiled module. From the sources (tests run TypeScript), the build's copy: a worker
 * thread cannot load TypeScript. Null when there is none (a source tree never built).
 */
export function workerModule(): URL | null {
  const here = import.meta.url;
  const url = here.endsWith(".ts")
    ? new URL("../../../dist/server/store/sqlite/ingest-worker.js", here)
    : new URL("./ingest-worker.js", here);
  return existsSync(url) ? url : null;
}

export class IngestThread {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private broken: Error | null = null;
  private closing: Promise<void> | null = null;

  constructor(module: URL, file: string, onError: (err: Error) => void) {
    this.worker = new Worker(module, { workerData: { file } });
    this.worker.on("message", (m: WorkerMessage) => this.receive(m));
    this.worker.on("error", (err) => {
      onError(err);
      this.fail(err);
    });
    this.worker.on("exit", (code) => this.fail(new Error(`the ingest thread exited with code ${code}`)));
  }

  /** Commits a batch on the worker; resolves once it is durable. `now`: this thread's clock. */
  commit(batch: IngestEvent[], now: number): Promise<IngestResult[]> {
    if (this.broken) return Promise.reject(unavailable("the store's ingest thread failed; retry later", this.broken));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ type: "commit", id, batch, now });
    });
  }

  /** Moves the worker's staged rows, closes its connection and ends the thread. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      if (this.broken) {
        resolve();
        return;
      }
      this.worker.once("exit", () => resolve());
      this.worker.postMessage({ type: "close" });
    });
    return this.closing;
  }

  /** Ends the thread at once, as a crash would (tests); commits fail with 503 from then on. */
  async terminate(): Promise<void> {
    await this.worker.terminate();
  }

  private receive(m: WorkerMessage): void {
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.type === "results") p.resolve(m.results);
    else p.reject(new Error(m.message));
  }

  private fail(err: Error): void {
    this.broken ??= err;
    for (const p of this.pending.values()) p.reject(unavailable("the store's ingest thread failed; retry later", err));
    this.pending.clear();
  }
}
