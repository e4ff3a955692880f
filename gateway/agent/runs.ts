/**
 * How the uplink cuts its outbox into requests: runs of readings (one heartbeat array each, or a
 * lone POST /data), config events alone, and each entry's wire form with its TIMESTAMP and KEY.
 */
import type { WireReading } from "../../protocol/block-client.js";
import { MIN_TIMESTAMP } from "../../protocol/payloads.js";
import type { OutboxEntry } from "./types.js";

/** The server's JSON body limit is 64 KiB: a heartbeat array stays under this many bytes. */
export const MAX_BATCH_BYTES = 56 * 1024;

/**
 * Cuts the oldest entries into at most `max` runs: a config event alone, or consecutive readings
 * up to `size` of them and MAX_BATCH_BYTES. Stops after a config event so it is not overtaken.
 */
export function splitRuns(batch: OutboxEntry[], size: number, max: number): OutboxEntry[][] {
  const runs: OutboxEntry[][] = [];
  let i = 0;
  while (i < batch.length && runs.length < max) {
    const first = batch[i] as OutboxEntry;
    const run = [first];
    i++;
    if (first.kind === "config") {
      runs.push(run);
      break;
    }
    let bytes = wireBytes(first);
    while (i < batch.length && run.length < size) {
      const e = batch[i] as OutboxEntry;
      bytes += wireBytes(e);
      if (e.kind === "config" || bytes > MAX_BATCH_BYTES) break;
      run.push(e);
      i++;
    }
    runs.push(run);
    if (i < batch.length && (batch[i] as OutboxEntry).kind === "config") break;
  }
  return runs;
}

export function stamp(e: OutboxEntry): { TIMESTAMP?: number; KEY: string } {
  // A Pi without a real-time clock may stamp 1970 before NTP: the server then uses its own time.
  return e.ts >= MIN_TIMESTAMP ? { TIMESTAMP: e.ts, KEY: e.key } : { KEY: e.key };
}

/** A generous estimate of a reading's JSON size in a heartbeat array. */
function wireBytes(e: OutboxEntry): number {
  return 64 + e.G.length + e.DA.length * 2 + e.key.length;
}

export function wire(e: OutboxEntry): WireReading {
  // Built directly (no spread): one object per reading on the uplink's hot path.
  return e.ts >= MIN_TIMESTAMP ? { G: e.G, V: e.V, D: e.D, DA: e.DA, TIMESTAMP: e.ts, KEY: e.key } : { G: e.G, V: e.V, D: e.D, DA: e.DA, KEY: e.key };
}
