/**
 * File descriptors: every simulated block holds a long-poll socket, so a fleet needs about one
 * descriptor per block besides the shared pools. Node raises the soft RLIMIT_NOFILE to the hard limit
 * as it starts (protocol/open-files.ts); here the run checks that the fleet fits in what it got
 * before it starts, rather than failing thousands of polls with EMFILE.
 */
import { type FileLimit, openFileLimit } from "../protocol/open-files.js";
import { SHORT_CONNECTIONS } from "./fleet/transport.js";

export { type FileLimit, openFileLimit };

/** Descriptors a process of `blocks` blocks against `servers` servers needs, with room to spare. */
export function descriptorsNeeded(blocks: number, servers = 1): number {
  // One held poll per block; per server the short-call pool (plain and TLS) and the user API pool;
  // the callback receiver, stdio, the event loop's own and a margin.
  return Math.ceil(blocks * 1.02) + servers * (2 * SHORT_CONNECTIONS + 32) + 128;
}

/** The refusal when a fleet cannot fit, naming `ulimit -n` and the number; null when it fits. */
export function fleetDoesNotFit(blocks: number, servers: number, limit: FileLimit | null): string | null {
  if (limit === null) return null;
  const need = descriptorsNeeded(blocks, servers);
  if (need <= limit.soft) return null;
  const hard = Number.isFinite(limit.hard) ? `, hard limit ${limit.hard}` : "";
  return (
    `${blocks} blocks need about ${need} open files and this process may open ${limit.soft}${hard}: ` +
    `raise the limit with \`ulimit -n ${need}\` (above the hard limit: as root, or in /etc/security/limits.conf), ` +
    `run fewer blocks, or spread them with --workers over more processes`
  );
}
