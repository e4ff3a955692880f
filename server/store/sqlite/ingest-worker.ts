/**
 * The ingest thread's side (see ingest-thread.ts): a connection of its own with
 * `synchronous=NORMAL`, the ingest transaction, the staged-row mover, and an fdatasync of the WAL
 * after each commit and before the results go back, so a batch is answered only once durable.
 * The thread has nothing else to do: it sleeps on the shared counter of published records
 * (ingest-channel.ts) instead of running an event loop, and every record published while it
 * committed and flushed goes into its next transaction and flush.
 */
import { execFileSync } from "node:child_process";
import { closeSync, fdatasyncSync, fsyncSync, openSync, readlinkSync, writeFileSync } from "node:fs";
import { getPriority, setPriority } from "node:os";
import { dirname } from "node:path";
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import type { IngestEvent } from "../types.js";
import { ingestTransaction } from "./devices.js";
import { CLOSE, Channel, type ChannelMemory, DONE, FREE, INGEST, INGEST_WAITS, MAIN, MAIN_WAITS, PUBLISHED, WRITER } from "./ingest-channel.js";
import { ReadingsStaging, WAL_AUTOCHECKPOINT_PAGES } from "./staging.js";

const { file, memory } = workerData as { file: string; memory: ChannelMemory };

/** How far below the event loop's priority this thread runs where SCHED_BATCH cannot be set (nice levels). */
const NICE_BELOW = 10;

/**
 * Keeps this thread from preempting the event loop when woken, without starving it (Linux: a
 * thread is a task of its own, and its scheduling concerns it alone). At the default policy, the
 * event loop's wake-up of this thread, sleeping since its last flush, let it preempt the event
 * loop on the same core for its whole commit (measured: 0.24 ms inside Atomics.notify, several
 * times per millisecond of load), with HTTP requests and answers waiting meanwhile.
 *
 * SCHED_BATCH (set with chrt, util-linux) removes exactly that: a batch task never preempts on
 * wake-up, it waits for a free core or the scheduler's tick, and it keeps the weight of nice 0.
 * Main ran it 10 nice levels lower instead, which also removed the preemption, but at a tenth of
 * the weight of every nice-0 task on the machine: beside the simulator's processes or other busy
 * programs it was the first thread to starve (0.40 × offered at 10,000 blocks, the ingest thread
 * 7 % on a CPU and 59 % waiting for one: docs/scaling-fleet.md, "Earlier runs"). Without chrt it falls
 * back to that. Returns the thread id, or null where there is none to adjust.
 */
function schedule(): number | null {
  if (process.platform !== "linux") return null;
  let tid: number;
  try {
    tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    // Named, so that top -H, ps -L and the benchmarks find it (at most 15 bytes).
    writeFileSync("/proc/thread-self/comm", "blockkit-ingest");
  } catch {
    return null; // no /proc: the process's priority, as before
  }
  try {
    execFileSync("chrt", ["--batch", "--pid", "0", String(tid)], { stdio: "ignore", timeout: 5000 });
  } catch {
    try {
      setPriority(tid, Math.min(19, getPriority(tid) + NICE_BELOW));
    } catch {
      // not allowed: the process's priority
    }
  }
  return tid;
}
const tid = schedule();
const channel = new Channel(memory);
const control = channel.control;
const db = new Database(file);
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL");
db.pragma("foreign_keys = ON");
db.pragma("busy_timeout = 5000");
db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
const staging = new ReadingsStaging(db, { manual: true });
const ingest = ingestTransaction(db, staging, null);
// Started: the connection is open and the statements prepared (a failure before this rejects
// IngestThread.started, and openStore fails loudly).
parentPort?.postMessage({ tid });
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

/**
 * Takes the turn at SQLite's write lock (ingest-channel.ts, WRITER); waits while the event loop's
 * connection has it (one write of the event loop: writer.ts). Each wait is bounded: a lost wake-up
 * costs one wait at most.
 */
function takeWriter(): void {
  if (Atomics.compareExchange(control, WRITER, FREE, INGEST) === FREE) return;
  Atomics.store(control, INGEST_WAITS, 1);
  for (;;) {
    const w = Atomics.load(control, WRITER);
    if (w === INGEST) break;
    if (w === FREE && Atomics.compareExchange(control, WRITER, FREE, INGEST) === FREE) break;
    Atomics.wait(control, WRITER, w, IDLE_WAIT_MS);
  }
  Atomics.store(control, INGEST_WAITS, 0);
}

/** Gives the turn up: to the event loop's connection when it waits for it, else free. */
function releaseWriter(): void {
  Atomics.store(control, WRITER, Atomics.load(control, MAIN_WAITS) === 1 ? MAIN : FREE);
  Atomics.notify(control, WRITER);
}

let seen = 0;
let answered = 0;

/**
 * Commits every record published since the last one in one transaction and one flush. The turn
 * at the write lock is taken first, so what was published while the event loop wrote goes in too;
 * it is given up before the flush (the WAL is flushed without SQLite's lock).
 */
function commitPublished(): void {
  takeWriter();
  const published = Atomics.load(control, PUBLISHED);
  const batch: IngestEvent[] = [];
  let now = 0;
  while (seen !== published) {
    now = channel.read(seen, batch);
    seen = (seen + 1) | 0;
  }
  try {
    let results: ReturnType<typeof ingest.commit>;
    try {
      results = ingest.commit(batch, now);
    } finally {
      releaseWriter();
    }
    flushWal();
    results.forEach((r, i) => channel.setResult((answered + i) | 0, r));
  } catch (err) {
    channel.setError((err as Error).message);
    for (let i = 0; i < batch.length; i++) channel.setFailed((answered + i) | 0);
  }
  answered = (answered + batch.length) | 0;
  Atomics.store(control, DONE, answered);
  Atomics.notify(control, DONE);
}

/**
 * Longest sleep of an idle worker. close() sets CLOSE and then wakes PUBLISHED, but a worker that
 * read CLOSE as 0 just before and has not yet begun its wait misses that wake-up (PUBLISHED did not
 * change, so the wait does not return at once): with nothing staged its wait had no end, and the
 * store's close() hung (seen once in a full test run on a loaded machine). It now looks again at
 * least this often, which bounds such a close to this time; idle, it costs one wake-up a second.
 */
const IDLE_WAIT_MS = 1000;

/** The staged-row mover's writes, in this thread's turn at the write lock. */
function moveStaged(move: () => void): void {
  takeWriter();
  try {
    move();
  } finally {
    releaseWriter();
  }
}

for (;;) {
  const published = Atomics.load(control, PUBLISHED);
  if (published !== seen) {
    commitPublished();
  } else if (Atomics.load(control, CLOSE) === 1) {
    break;
  } else {
    Atomics.wait(control, PUBLISHED, seen, Math.min(staging.dueIn(Date.now()), IDLE_WAIT_MS));
  }
  if (staging.dueIn(Date.now()) === 0) moveStaged(() => staging.moveIfDue(Date.now()));
}
moveStaged(() => staging.close());
if (walFd !== null) closeSync(walFd);
db.close();
