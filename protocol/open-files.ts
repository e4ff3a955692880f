/**
 * The open-file limit (RLIMIT_NOFILE) of this process. Each held long-poll costs a descriptor on
 * both ends, so the server sizes its connection cap from it (server/services/limits.ts) and the
 * simulator checks that a fleet fits before it starts (simulator/fd-limit.ts). It lives here, the one
 * folder that the server, the gateway and the simulator all import.
 *
 * Raising the soft limit: Node.js itself raises the soft limit to the hard one when it starts, on
 * every POSIX system (node.cc, PlatformInit: setrlimit(RLIMIT_NOFILE) to rlim_max, or the largest
 * value accepted when the hard limit is unlimited), so every blockkit process (server, gateway,
 * simulator and its workers) runs at the hard limit without doing anything; JavaScript has no
 * setrlimit to do more. What a process can do is read what it got and say so: the server logs it at
 * start, the simulator refuses a fleet that cannot fit. A limit above the hard one is the system's
 * (`ulimit -H -n` as root, LimitNOFILE= in a systemd unit, /etc/security/limits.conf).
 */
import { readFileSync } from "node:fs";

export interface FileLimit {
  /** The limit that applies (descriptors this process may have open). Infinity when unlimited. */
  soft: number;
  /** The most the soft limit may be raised to without privileges. Infinity when unlimited. */
  hard: number;
}

/** This process's RLIMIT_NOFILE (Linux: /proc/self/limits; `limitsText` for tests); null where it cannot be read. */
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
  const limit = { soft: n(m[1] as string), hard: n(m[2] as string) };
  return Number.isNaN(limit.soft) || Number.isNaN(limit.hard) ? null : limit;
}
