/** The messages between `blockkit sim --workers N` and its worker processes (Node's IPC channel). */
import type { CleanupResult } from "../cleanup.js";
import type { LogEntry } from "../event-log.js";
import type { Report } from "../report.js";
import type { RunStatus } from "../status.js";
import type { BlockRow, SortKey } from "../tui/view.js";

/** Rows a worker sends for the TUI's table: the top of its blocks in the current sort. */
export const TOP_ROWS = 50;

export type WorkerMessage =
  /** Twice a second: the worker's status, its latency histograms (merged exactly) and its top rows. */
  | { type: "state"; status: RunStatus; histograms: Report["histograms"]; rows: BlockRow[] }
  | { type: "log"; entry: LogEntry }
  | { type: "report"; report: Report; cleanup: CleanupResult | null }
  | { type: "failed"; message: string };

export type CoordinatorMessage = { type: "pause" } | { type: "resume" } | { type: "chaos" } | { type: "stop" } | { type: "sort"; sort: SortKey };
