/**
 * File descriptors: every simulated block holds a long-poll socket, so a fleet needs about one
 * descriptor per block besides the shared pools. The command respawns itself (cli/respawn.ts) with
 * the soft RLIMIT_NOFILE raised to the hard limit; here the run checks that the fleet fits before
 * it starts, rather than failing thousands of polls with EMFILE.
 */
import { readFileSync } from "node:fs";
import { SHORT_CONNECTIONS } from "./fleet/transport.js";

export interface FileLimit {
  soft: number;
  hard: number;
}

/** This process's RLIMIT_NOFILE (Linux: /proc/self/limits); null where it cannot be read. */
export function openFileLimit(limitsText?: string): FileLimit | null {
  let text = limitsText;
  if (text === undefined) {
    try {
      text = readFileSync("/proc/self/limits", "utf8");
    } catch {
      return null;
    }
  }
  const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(text);
  if (!m) return null;
  const n = (v: string): number => (v === "unlimited" ? Number.POSITIVE_INFINITY : Number(v));
  return { soft: n(m[1] as string), hard: n(m[2] as string) };
}

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
