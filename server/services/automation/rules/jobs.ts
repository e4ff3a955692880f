/**
 * Rule runs that survive the loss of the instance running them (several instances on PostgreSQL).
 * A firing is a row of `rule_jobs` (inserted by RuleEvalsRepo.consume with the removal of the
 * evaluation that fired it, claiming the rule's timeout), leased to the instance that fired it; the
 * run records its progress after each action (and, before a sleep, when the sleep ends); this
 * instance renews the leases of its runs every third of the lease. An instance that dies stops
 * renewing: once a lease lapses any instance takes the job over (the oldest job of its rule first:
 * a rule's jobs run one at a time, in firing order, across instances) and resumes it at its first
 * unfinished action (a sleep only for what is left of it; from the last getServiceSnapshot when a
 * later action sends that snapshot, which was not kept). An action that was in flight when its
 * instance died runs again: at least once.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { RuleJobRow, RuleJobsRepo } from "../../../store/types.js";

/** Jobs taken over per poll at most. */
const TAKE_BATCH = 16;

export class RuleJobs {
  readonly lease = randomUUID();
  private readonly active = new Set<number>();
  private timer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | null = null;
  private stopped = false;
  private lastError = 0;

  constructor(
    private readonly repo: RuleJobsRepo,
    readonly leaseMs: number,
    private readonly onTaken: (job: RuleJobRow) => void,
    private readonly log: Logger,
    private readonly clock: () => number,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.poll(), Math.min(1000, Math.max(50, this.leaseMs / 2)));
    this.timer.unref();
    this.renewTimer = setInterval(() => this.renew(), Math.max(50, this.leaseMs / 3));
    this.renewTimer.unref();
    this.poll();
  }

  /** Stops taking jobs; then `release()` hands the unfinished ones to the other instances. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearInterval(this.renewTimer);
    await this.polling;
  }

  /** Lets the other instances take this instance's unfinished jobs at once (a clean stop). */
  async release(): Promise<void> {
    const ids = [...this.active];
    this.active.clear();
    await this.repo.renew(this.lease, ids, 0, 0).catch((err: unknown) => this.failed(err, "releasing rule jobs failed"));
  }

  /** A job fired here (RuleEvalsRepo.consume, leased to this instance): its lease is renewed from now on. */
  adopt(id: number): void {
    this.active.add(id);
  }

  /** False when the job is no longer this instance's (it lost the lease): the run stops. */
  async progress(id: number, step: number, steps: unknown[], sleepUntil: number | null): Promise<boolean> {
    try {
      const mine = await this.repo.progress(id, this.lease, step, steps, sleepUntil);
      if (!mine) this.active.delete(id);
      return mine;
    } catch (err) {
      // Unreachable store: go on; the lease lapses if it stays so, and the job is resumed elsewhere.
      this.failed(err, "recording a rule run's progress failed");
      return true;
    }
  }

  async finish(id: number): Promise<void> {
    this.active.delete(id);
    await this.repo.finish(id).catch((err: unknown) => this.failed(err, "finishing a rule job failed (it will be resumed)"));
  }

  private poll(): void {
    if (this.stopped || this.polling) return;
    this.polling = this.repo
      .takeOver(this.lease, this.clock(), this.leaseMs, TAKE_BATCH)
      .then((jobs) => {
        for (const job of jobs) {
          this.active.add(job.id);
          this.log.info({ job: job.id, rid: job.rule_id, step: job.step }, "taking over a rule run whose instance lost its lease");
          this.onTaken(job);
        }
      })
      .catch((err: unknown) => this.failed(err, "taking over rule jobs failed"))
      .finally(() => {
        this.polling = null;
      });
  }

  private renew(): void {
    if (this.active.size === 0 || this.stopped) return;
    this.repo.renew(this.lease, [...this.active], this.clock(), this.leaseMs).catch((err: unknown) => this.failed(err, "renewing rule job leases failed"));
  }

  private failed(err: unknown, message: string): void {
    const now = Date.now();
    if (now - this.lastError < 10_000) return;
    this.lastError = now;
    this.log.warn({ err }, message);
  }
}
