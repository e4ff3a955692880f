/** Headless mode: progress lines and log entries on stderr while the run goes. */
import type { Writable } from "node:stream";
import type { Report } from "./report.js";
import type { SimRunner } from "./runner.js";
import { duration, ms } from "./tui/format.js";

export interface HeadlessOptions {
  /** Progress line interval, ms. Default 2000. */
  progressMs?: number;
  out?: Writable;
}

export function progressLine(r: SimRunner): string {
  const c = r.metrics.counters;
  const rate = r.ackRate();
  const when = r.phase === "running" ? `${duration(r.measuredMs())}/${duration(r.scenario.duration_s * 1000)}` : r.phase;
  return (
    `[${when}] blocks ${r.fleet.activated}/${r.fleet.planned} sent ${c.events_sent} acked ${c.events_acked} (${rate}/s) ` +
    `errors ${c.errors} cmd ${c.commands_received}/${c.commands_sent} cb ${c.callbacks_received} ` +
    `p99 ingest ${ms(r.metrics.ingest.percentile(99))} cmd ${ms(r.metrics.command.percentile(99))} cb ${ms(r.metrics.callback.percentile(99))} ms ` +
    `cpu ${Math.round(r.load.current)}%`
  );
}

/** Runs to the end, writing progress; resolves with the report. */
export async function runHeadless(r: SimRunner, o: HeadlessOptions = {}): Promise<Report> {
  const out = o.out ?? process.stderr;
  r.log.onEntry((e) => out.write(`${e.level}: ${e.text}\n`));
  const t = setInterval(() => out.write(`${progressLine(r)}\n`), o.progressMs ?? 2000);
  try {
    return await r.finished;
  } finally {
    clearInterval(t);
  }
}
