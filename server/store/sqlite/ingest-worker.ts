/**
 * The ingest thread's side (see ingest-thread.ts): a connection of its own with
 * `synchronous=NORMAL`, the ingest transaction, the staged-row mover, and an fdatasync of the WAL
 * after each commit and before the results go back, so a batch is answered only once durable.
 */
import { closeSync, fdatasyncSync, fsyncSync, openSync } from "node:fs";
import { dirname } from "node:path";
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import type { IngestEvent } from "../types.js";
import { StoreCache } from "./cache.js";
import { ingestTransaction } from "./devices.js";
import type { WorkerMessage } from "./ingest-thread.js";
import { ReadingsStaging } from "./staging.js";

type Request = { type: "commit"; id: number; batch: IngestEvent[]; now: number } | { type: "close" };

const port = parentPort;
if (!port) throw new Error("ingest-worker.ts runs as a worker thread");
const file = (workerData as { file: string }).file;
const db = new Database(file);
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL");
db.pragma("foreign_keys = ON");
db.pragma("busy_timeout = 5000");
const staging = new ReadingsStaging(db);
const ingest = ingestTransaction(db, new StoreCache(), staging, false);
let walFd: number | null = null;

/** Everything written to the WAL so far is on disk once this returns. */
function flushWal(): void {
  if (walFd === null) {
    walFd = openSync(`${file}-wal`, "r");
    // The WAL's directory entry, once: a file created just before a power cut may vanish.
    const dir = openSync(dirname(file), "r");
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }
  fdatasyncSync(walFd);
}

const post = (m: WorkerMessage): void => port.postMessage(m);

type Commit = Extract<Request, { type: "commit" }>;
let queued: Commit[] = [];
let scheduled = false;

/**
 * Commits every batch that arrived since the last turn in one transaction and one flush: while
 * this thread waits for the disk, the main thread keeps posting, and the next turn takes them all.
 */
function drain(): void {
  scheduled = false;
  const taken = queued;
  queued = [];
  const batch: IngestEvent[] = [];
  for (const c of taken) for (const e of c.batch) batch.push(e);
  const now = (taken[taken.length - 1] as Commit).now;
  try {
    const results = ingest.commit(batch, now);
    flushWal();
    let i = 0;
    for (const c of taken) {
      post({ type: "results", id: c.id, results: results.slice(i, i + c.batch.length) });
      i += c.batch.length;
    }
  } catch (err) {
    for (const c of taken) post({ type: "failed", id: c.id, message: (err as Error).message });
  }
}

port.on("message", (m: Request) => {
  if (m.type === "commit") {
    queued.push(m);
    if (!scheduled) {
      scheduled = true;
      setImmediate(drain);
    }
    return;
  }
  if (queued.length > 0) drain();
  staging.close();
  if (walFd !== null) closeSync(walFd);
  db.close();
  port.close();
});
