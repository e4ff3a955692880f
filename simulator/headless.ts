/** Headless mode: progress lines and log entries on stderr while the run goes. */
import type { Writable } from "node:stream";
import type { LogEntry } from "./event-log.js";
import type { Report } from "./report.js";
import type { RunStatus } from "./status.js";
import { duration, ms } from "./tui/format.js";

export interface HeadlessOptions {
  /** Progress line interval, ms. Default 2000. */
  progressMs?: number;
  out?: Writable;
}

/** What a headless run follows: one SimRunner (runnerStatus) or the workers of --workers. */
export interface RunHandle {
  status(): RunStatus;
  onLog(listener: (e: LogEntry) => void): void;
  finished: Promise<Report>;
}

export function progressLine(s: RunStatus): string {
  const c = s.metrics.counters;
  const when = s.phase === "running" ? `${duration(s.measuredMs)}/${duration(s.durationMs)}` : s.phase;
  return (
    `[${when}] blocks ${s.blocks.activated}/${s.blocks.planned} sent ${c.events_sent} acked ${c.events_acked} (${s.ackRate}/s) ` +
    `errors ${c.errors}${c.throttled > 0 ? ` throttled ${c.throttled}` : ""} cmd ${c.commands_received}/${c.commands_sent} cb ${c.callbacks_received} ` +
    `p99 ingest ${ms(s.metrics.ingest.p99)} cmd ${ms(s.metrics.command.p99)} cb ${ms(s.metrics.callback.p99)} ms ` +
    `cpu ${Math.round(s.cpuPercent)}%`
  );
}

/** Runs to the end, writing progress; resolves with the report. */
export async function runHeadless(r: RunHandle, o: HeadlessOptions = {}): Promise<Report> {
  const out = o.out ?? process.stderr;
  r.onLog((e) => out.write(`${e.level}: ${e.text}\n`));
  const t = setInterval(() => out.write(`${progressLine(r.status())}\n`), o.progressMs ?? 2000);
  try {
    return await r.finished;
  } finally {
    clearInterval(t);
  }
}
