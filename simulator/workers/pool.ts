/**
 * The coordinator of `blockkit sim --workers N`: forks N worker processes of this very command, each
 * running one part of the fleet (simulator/part.ts), and shows them as one run: a merged status for
 * the progress lines and the TUI (counts summed, latency histograms added), the log entries of all,
 * and at the end one report merged from theirs (simulator/merge.ts).
 */
import { type ChildProcess, fork } from "node:child_process";
import type { CleanupResult } from "../cleanup.js";
import { EventLog, type LogEntry } from "../event-log.js";
import { type MergedReport, mergeReports } from "../merge.js";
import type { FleetPart, Report } from "../report.js";
import type { RunPhase } from "../runner.js";
import { mergeStatus, type RunStatus } from "../status.js";
import { type BlockRow, type SortKey, type ViewSource, viewOf } from "../tui/view.js";
import type { CoordinatorMessage, WorkerMessage } from "./messages.js";

export interface PoolOptions {
  /** The command line to run in each worker (`sim …`, without the node and script). */
  args: string[];
  /** The part of each worker. */
  parts: FleetPart[];
  /** The part of the whole scenario the workers together run (the shard), null for all of it. */
  shard: FleetPart | null;
  /** The script to fork (this command's entry point). Default process.argv[1]. */
  script?: string;
}

interface Worker {
  part: FleetPart;
  child: ChildProcess;
  state: Extract<WorkerMessage, { type: "state" }> | null;
  report: Report | null;
  cleanup: CleanupResult | null;
  failed: string | null;
}

export class WorkerPool {
  readonly log = new EventLog();
  readonly finished: Promise<MergedReport>;
  private readonly workers: Worker[] = [];
  private resolve!: (r: MergedReport) => void;
  private reject!: (e: Error) => void;
  private sort: SortKey = "errors";
  private chaosNext = 0;

  constructor(private readonly o: PoolOptions) {
    this.finished = new Promise<MergedReport>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // Nobody may be waiting yet when a worker fails at once.
    this.finished.catch(() => undefined);
  }

  /** Forks the workers; resolves once each has reported its first state (or failed). */
  start(): Promise<void> {
    const script = this.o.script ?? (process.argv[1] as string);
    return new Promise((resolve) => {
      let ready = 0;
      const onReady = (): void => {
        if (++ready === this.o.parts.length) resolve();
      };
      for (const part of this.o.parts) {
        const child = fork(script, [...this.o.args, "--worker-part", `${part.index}/${part.count}`, "--workers", "1"], {
          stdio: ["ignore", "inherit", "inherit", "ipc"],
        });
        const w: Worker = { part, child, state: null, report: null, cleanup: null, failed: null };
        this.workers.push(w);
        let counted = false;
        const readyOnce = (): void => {
          if (!counted) {
            counted = true;
            onReady();
          }
        };
        child.on("message", (m: WorkerMessage) => {
          if (m.type === "state") {
            w.state = m;
            readyOnce();
          } else if (m.type === "log") this.log.add(m.entry.level, m.entry.text);
          else if (m.type === "report") {
            w.report = m.report;
            w.cleanup = m.cleanup;
          } else if (m.type === "failed") w.failed = m.message;
        });
        child.on("exit", (code, signal) => {
          if (!w.report && !w.failed) w.failed = `worker ${part.index}/${part.count} ended (${signal ?? `exit code ${code}`}) without a report`;
          readyOnce();
          this.settle();
        });
      }
    });
  }

  private settle(): void {
    if (this.workers.some((w) => w.child.exitCode === null && w.child.signalCode === null)) return;
    const failed = this.workers.filter((w) => w.failed);
    if (failed.length > 0) return this.reject(new Error(failed.map((w) => w.failed).join("; ")));
    try {
      const merged = mergeReports(this.workers.map((w) => w.report as Report), { allowPartial: this.o.shard !== null });
      this.resolve({ ...merged, part: this.o.shard });
    } catch (err) {
      this.reject(err as Error);
    }
  }

  /** The cleanup of every worker, summed (null when the run did not clean up). */
  cleanupResult(): CleanupResult | null {
    const done = this.workers.map((w) => w.cleanup).filter((c): c is CleanupResult => c !== null);
    if (done.length === 0) return null;
    const sum: CleanupResult = { blocks: done.reduce((n, c) => n + c.blocks, 0), callbacks: done.reduce((n, c) => n + c.callbacks, 0), failed: done.flatMap((c) => c.failed) };
    // Each worker cleans up its own blocks under the same bound, at the same time.
    const left = done.filter((c) => c.left !== undefined).map((c) => c.left as NonNullable<CleanupResult["left"]>);
    if (left.length > 0) sum.left = { afterS: Math.max(...left.map((l) => l.afterS)), blocks: left.flatMap((l) => l.blocks), callbacks: left.flatMap((l) => l.callbacks) };
    return sum;
  }

  /** Each worker's phase as it last reported it ("starting" before its first report). */
  phases(): RunPhase[] {
    return this.workers.map((w) => w.state?.status.phase ?? "starting");
  }

  status(): RunStatus {
    const states = this.workers.map((w) => w.state).filter((s) => s !== null);
    return mergeStatus(states.map((s) => ({ status: s.status, histograms: s.histograms })));
  }

  onLog(listener: (e: LogEntry) => void): void {
    this.log.onEntry(listener);
  }

  private tell(m: CoordinatorMessage, to: Worker[] = this.workers): void {
    for (const w of to) if (w.child.connected) w.child.send(m);
  }

  requestStop(): void {
    this.tell({ type: "stop" });
  }

  /** Ends the workers that are still running (after a failure). */
  kill(): void {
    for (const w of this.workers) if (w.child.exitCode === null) w.child.kill("SIGTERM");
  }

  /** The TUI's source: the merged status, and a table of the workers' top rows in the chosen sort. */
  source(): ViewSource {
    return {
      view: ({ sort, page, pageSize, logLines }) => {
        if (sort !== this.sort) {
          this.sort = sort;
          this.tell({ type: "sort", sort });
        }
        const rows: BlockRow[] = this.workers.flatMap((w) => w.state?.rows ?? []);
        if (sort === "errors") rows.sort((a, b) => b.errors - a.errors || b.rate - a.rate || a.nodeId.localeCompare(b.nodeId));
        else if (sort === "rate") rows.sort((a, b) => b.rate - a.rate || a.nodeId.localeCompare(b.nodeId));
        else rows.sort((a, b) => a.nodeId.localeCompare(b.nodeId));
        const pages = Math.max(1, Math.ceil(rows.length / pageSize));
        const p = Math.min(Math.max(0, page), pages - 1);
        return viewOf(this.status(), rows.slice(p * pageSize, (p + 1) * pageSize), p, pages, sort, this.log.tail(logLines));
      },
      pause: () => this.tell({ type: "pause" }),
      resume: () => this.tell({ type: "resume" }),
      injectChaos: () => {
        const w = this.workers[this.chaosNext++ % this.workers.length];
        if (w) this.tell({ type: "chaos" }, [w]);
      },
      quit: () => this.requestStop(),
    };
  }
}

