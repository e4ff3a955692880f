/**
 * The TUI's view model: one plain snapshot of the run, built at the render rate (never per event).
 * The components only read it, so they are tested with hand-made views.
 */
import type { LogEntry } from "../event-log.js";
import type { MetricsSnapshot } from "../metrics/metrics.js";
import type { RunPhase, SimRunner } from "../runner.js";
import { type RunStatus, runnerStatus } from "../status.js";

export type SortKey = "errors" | "rate" | "node";
export const SORT_KEYS: SortKey[] = ["errors", "rate", "node"];

export interface BlockRow {
  nodeId: string;
  state: string;
  rate: number;
  sent: number;
  acked: number;
  errors: number;
  backlog: number;
  /** `type=value` of each device, e.g. `t9=21.3 r1002=1`. */
  devices: string;
}

export interface RunView {
  name: string;
  phase: RunPhase;
  paused: boolean;
  elapsedMs: number;
  remainingMs: number;
  blocks: { planned: number; started: number; activated: number; online: number; paused: number; dropped: number };
  metrics: MetricsSnapshot;
  cpuPercent: number;
  loopDelayP99Ms: number;
  rows: BlockRow[];
  page: number;
  pages: number;
  sort: SortKey;
  log: LogEntry[];
  callbackDevices: number;
}

/** What the TUI drives. SimRunner satisfies it through `runnerSource`. */
export interface ViewSource {
  view(opts: { sort: SortKey; page: number; pageSize: number; logLines: number }): RunView;
  pause(): void;
  resume(): void;
  injectChaos(): void;
  quit(): void;
}

const SHORT: Record<string, string> = {
  "9": "temp",
  "1": "temp",
  "8": "hum",
  "5": "btn",
  "6": "light",
  "11": "rf",
  "1002": "relay",
  "1000": "led",
  "1004": "cam",
  "12": "sound",
};

/** The blocks in the order of `sort` (troubled ones first for "errors"), `count` of them from `offset`. */
export function blockRows(r: SimRunner, sort: SortKey, offset: number, count: number): BlockRow[] {
  const order = r.fleet.blocks.slice(0, r.fleet.running);
  // Troubled blocks first: most errors, then those not online (dropped, paused, offline).
  const down = (b: (typeof order)[number]): number => (b.state === "online" ? 0 : 1);
  if (sort === "errors") order.sort((a, b) => b.errors - a.errors || down(b) - down(a) || b.rate.value - a.rate.value || a.index - b.index);
  else if (sort === "rate") order.sort((a, b) => b.rate.value - a.rate.value || a.index - b.index);
  return order.slice(offset, offset + count).map((b) => ({
    nodeId: b.nodeId,
    state: b.state,
    rate: b.rate.value,
    sent: b.sent,
    acked: b.acked,
    errors: b.errors,
    backlog: b.backlog,
    devices: [...b.devices.values()].map((d) => `${SHORT[String(d.D)] ?? `d${d.D}`}=${d.last ?? "-"}`).join(" "),
  }));
}

/** The view of a status with its page of rows. */
export function viewOf(st: RunStatus, rows: BlockRow[], page: number, pages: number, sort: SortKey, log: LogEntry[]): RunView {
  return {
    name: st.name,
    phase: st.phase,
    paused: st.paused,
    elapsedMs: st.elapsedMs,
    remainingMs: st.remainingMs,
    blocks: st.blocks,
    metrics: st.metrics,
    cpuPercent: st.cpuPercent,
    loopDelayP99Ms: st.loopDelayP99Ms,
    rows,
    page,
    pages,
    sort,
    log,
    callbackDevices: st.callbackDevices,
  };
}

export function runnerSource(r: SimRunner): ViewSource {
  return {
    view: ({ sort, page, pageSize, logLines }) => {
      const pages = Math.max(1, Math.ceil(r.fleet.running / pageSize));
      const p = Math.min(Math.max(0, page), pages - 1);
      return viewOf(runnerStatus(r), blockRows(r, sort, p * pageSize, pageSize), p, pages, sort, r.log.tail(logLines));
    },
    pause: () => void r.pause(),
    resume: () => void r.resume(),
    injectChaos: () => r.injectChaos(),
    quit: () => r.requestStop(),
  };
}
