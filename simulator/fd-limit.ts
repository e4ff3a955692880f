/**
 * File descriptors: every simulated block holds a long-poll socket, so a fleet needs about one
 * descriptor per block besides the shared pools. Node raises the soft RLIMIT_NOFILE to the hard limit
 * as it starts (protocol/open-files.ts); here the run checks that the fleet fits in what it got
 * before it starts, rather than failing thousands of polls with EMFILE. With `--workers N` each
 * process holds only its own blocks' sockets, so the check is per process, on the largest part.
 * The table of what fits where (simulator, sink, server) is in docs/simulator-fleet.md ("Open files").
 */
import { type FileLimit, openFileLimit } from "../protocol/open-files.js";
import { SHORT_CONNECTIONS } from "./fleet/transport.js";

export { type FileLimit, openFileLimit };

/** The user API's connections (simulator/runner.ts), to the first server only; counted per server. */
const API_CONNECTIONS = 32;
/** The callback receiver, stdio, the event loop's own descriptors, the IPC of a worker, and a margin. */
const FIXED = 128;

/**
 * Descriptors a process of `blocks` blocks against `servers` servers needs, with room to spare:
 * one held poll per block (its activation reuses the connection), 2 % more for polls renewed while
 * the last one's connection is still closing; per server, the short calls' connections to its
 * API origin and to its stream origin (snapshots; with https both go through undici, as many), and
 * the user API's.
 */
export function descriptorsNeeded(blocks: number, servers = 1): number {
  return Math.ceil(blocks * 1.02) + servers * (2 * SHORT_CONNECTIONS + API_CONNECTIONS) + FIXED;
}

/**
 * The fewest processes that hold `blocks` blocks within `soft` descriptors each, the blocks dealt
 * out evenly (the largest part is ceil(blocks / n)); null when not even one block fits.
 */
export function processesToFit(blocks: number, servers: number, soft: number): number | null {
  if (descriptorsNeeded(1, servers) > soft) return null;
  if (!Number.isFinite(soft)) return 1;
  // Blocks one process can hold, then the count that brings the largest part under it.
  let perProcess = Math.floor((soft - servers * (2 * SHORT_CONNECTIONS + API_CONNECTIONS) - FIXED) / 1.02);
  while (perProcess > 1 && descriptorsNeeded(perProcess, servers) > soft) perProcess--;
  return Math.max(1, Math.ceil(blocks / perProcess));
}

/**
 * The refusal when a fleet cannot fit, naming `ulimit -n` and the number; null when it fits.
 * `blocks` is the largest part one process would run; `fleet` (the whole fleet and its process
 * count) lets the message name the `--workers` that would fit.
 */
export function fleetDoesNotFit(blocks: number, servers: number, limit: FileLimit | null, fleet?: { blocks: number; workers: number }): string | null {
  if (limit === null) return null;
  const need = descriptorsNeeded(blocks, servers);
  if (need <= limit.soft) return null;
  const hard = Number.isFinite(limit.hard) ? `, hard limit ${limit.hard}` : "";
  const whole = fleet && fleet.workers > 1 ? ` (the largest of ${fleet.workers} worker processes' shares of ${fleet.blocks})` : "";
  const fits = processesToFit(fleet?.blocks ?? blocks, servers, limit.soft);
  const spread = fits === null ? "" : `, or spread them over ${fits} processes or more with \`--workers ${fits}\` (each holds its own blocks' connections)`;
  return (
    `${blocks} blocks${whole} need about ${need} open files and a process may open ${limit.soft}${hard}: ` +
    `raise the limit with \`ulimit -n ${need}\` (above the hard limit: as root, or in /etc/security/limits.conf), ` +
    `run fewer blocks${spread}`
  );
}
