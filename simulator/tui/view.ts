/**
 * The TUI's view model: one plain snapshot of the run, built at the render rate (never per event).
 * The components only read it, so they are tested with hand-made views.
 */
import type { LogEntry } from "../event-log.js";
import type { MetricsSnapshot } from "../metrics/metrics.js";
import type { RunPhase, SimRunner } from "../runner.js";

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

export function runnerSource(r: SimRunner): ViewSource {
  return {
    view: ({ sort, page, pageSize, logLines }) => {
      const blocks = r.fleet.blocks;
      const counts = { planned: blocks.length, started: r.fleet.running, activated: r.fleet.activated, online: 0, paused: 0, dropped: 0 };
      for (const b of blocks) {
        const s = b.state;
        if (s === "online") counts.online++;
        else if (s === "paused") counts.paused++;
        else if (s === "dropped") counts.dropped++;
      }
      const order = blocks.slice(0, r.fleet.running);
      // Troubled blocks first: most errors, then those not online (dropped, paused, offline).
      const down = (b: (typeof order)[number]): number => (b.state === "online" ? 0 : 1);
      if (sort === "errors") order.sort((a, b) => b.errors - a.errors || down(b) - down(a) || b.rate.value - a.rate.value || a.index - b.index);
      else if (sort === "rate") order.sort((a, b) => b.rate.value - a.rate.value || a.index - b.index);
      const pages = Math.max(1, Math.ceil(order.length / pageSize));
      const p = Math.min(Math.max(0, page), pages - 1);
      const rows = order.slice(p * pageSize, (p + 1) * pageSize).map((b) => ({
        nodeId: b.nodeId,
        state: b.state,
        rate: b.rate.value,
        sent: b.sent,
        acked: b.acked,
        errors: b.errors,
        backlog: b.backlog,
        devices: [...b.devices.values()].map((d) => `${SHORT[String(d.D)] ?? `d${d.D}`}=${d.last ?? "-"}`).join(" "),
      }));
      return {
        name: r.scenario.name,
        phase: r.phase,
        paused: r.paused,
        elapsedMs: r.phase === "ramping" || r.phase === "warmup" ? Date.now() - r.startedAt : r.measuredMs(),
        remainingMs: r.remainingMs(),
        blocks: counts,
        metrics: r.metrics.snapshot(),
        cpuPercent: r.load.current,
        loopDelayP99Ms: r.load.loopDelayP99Ms(),
        rows,
        page: p,
        pages,
        sort,
        log: r.log.tail(logLines),
        callbackDevices: r.callbacks.registered.length,
      };
    },
    pause: () => void r.pause(),
    resume: () => void r.resume(),
    injectChaos: () => r.injectChaos(),
    quit: () => r.requestStop(),
  };
}
