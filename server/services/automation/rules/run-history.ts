/**
 * The run history of rules: written in batches a few ms later, in one transaction, off the path of
 * the command that the run just queued, and one disk sync for many runs; the listeners (the live
 * stream's rule frames) hear of each run once it is written.
 */
import type { Logger } from "pino";
import type { RuleRunRow, Store } from "../../../store/types.js";
import type { RunListener } from "./engine-types.js";

/** Delay before run history is written, ms. */
const RECORD_DELAY_MS = 20;

export class RunHistory {
  private unrecorded: { run: RuleRunRow; userId: number }[] = [];
  private readonly listeners: RunListener[] = [];
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    private readonly keep: number,
    private readonly log: Logger,
  ) {}

  onRun(listener: RunListener): void {
    this.listeners.push(listener);
  }

  /** Resolves once the runs recorded so far are written. */
  async idle(): Promise<void> {
    if (this.flushing) await this.flushing;
  }

  record(run: RuleRunRow, userId: number): void {
    this.unrecorded.push({ run, userId });
    this.flushing ??= new Promise<void>((resolve) => {
      setTimeout(() => {
        const runs = this.unrecorded.splice(0);
        this.flushing = null;
        this.store.rules
          .addRuns(
            runs.map((r) => r.run),
            this.keep,
          )
          .catch((err: unknown) => this.log.warn({ err, runs: runs.length }, "recording rule runs failed"))
          .finally(() => {
            for (const { run, userId } of runs) for (const l of this.listeners) l(userId, run.rule_id, run.ok, run.ts);
            resolve();
          });
      }, RECORD_DELAY_MS);
    });
  }
}
