/**
 * Rule evaluation once per event across instances, surviving the loss of the instance doing it
 * (PostgreSQL, RuleEvalsRepo). The ingest transaction writes each watched reading's evaluation to
 * `rule_evals`, leased to the committing instance; this instance evaluates its rows at once
 * (`submit`) and, in one transaction, inserts the jobs of the rules they fire and deletes the rows.
 * Rows whose lease lapsed (their instance died between the commit and that transaction) are
 * claimed by a poll, every half lease (at most a second), and evaluated here the same way.
 *
 * Order: batches are evaluated concurrently (a multi-device rule reads the store) but consumed in
 * the order they arrived, several at once when they are ready together; a device's rows are
 * consumed in commit order (the store refuses a row with an earlier row of its device waiting
 * elsewhere: it goes back to the table and is claimed again in order).
 */
import type { Logger } from "pino";
import type { FiringOutcome, RuleEvalsRepo, RuleFiring } from "../../../store/types.js";

/** A committed reading to evaluate: this instance's commit, or a row claimed from the store. */
export interface EvalInput {
  id: number;
  guid: string;
  userId: number;
  DA: string;
  ts: number;
  /** The device's value before it, as committed (null: none). */
  prev: string | null;
  cause: readonly number[];
}

export interface EvaluationHooks<C> {
  /** What these readings trigger (candidates, in order); rejects when it could not tell (retried). */
  evaluate(rows: EvalInput[]): Promise<C[]>;
  /** Whether a candidate fires now (timeout, loop, rate, queue), as a firing; its state is taken. */
  admit(c: C, now: number): RuleFiring | null;
  /** The outcome of each admitted firing, in order; null: nothing was fired (the state given back). */
  fired(admitted: { c: C; f: RuleFiring }[], outcomes: FiringOutcome[] | null): void;
}

interface Batch<C> {
  ids: number[];
  /** undefined while evaluating; null when the evaluation failed (the rows go back). */
  candidates?: C[] | null;
  ready: Promise<void>;
}

/** Rows claimed per poll at most. */
const CLAIM_BATCH = 64;

export class RuleEvaluations<C> {
  private readonly queue: Batch<C>[] = [];
  /** Row ids in the pipeline here (a poll does not claim them twice). */
  private readonly held = new Set<number>();
  private pumping: Promise<void> | null = null;
  private polling: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Claim again as soon as the poll under way ends (with its `fresh`); null: no. */
  private again: boolean | null = null;
  private lastError = 0;
  readonly stats = { claimed: 0, consumed: 0, released: 0 };

  constructor(
    private readonly repo: RuleEvalsRepo,
    private readonly lease: string,
    private readonly leaseMs: number,
    private readonly hooks: EvaluationHooks<C>,
    private readonly log: Logger,
    private readonly clock: () => number,
    /** Test-only (BLOCKKIT_TEST_HOLD_RULE_EVALUATION): this instance evaluates nothing, so a test can kill it in the window. */
    private readonly hold = false,
  ) {}

  start(): void {
    if (this.hold) return;
    this.timer = setInterval(() => this.poll(), Math.min(1000, Math.max(50, this.leaseMs / 2)));
    this.timer.unref();
    this.poll();
  }

  /** Stops claiming, finishes the batches under way, and hands the rows not consumed to the other instances. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.polling;
    await this.pumping;
    const ids = [...this.held];
    this.held.clear();
    await this.repo.release(this.lease, ids).catch((err: unknown) => this.failed(err, "releasing rule evaluations failed"));
  }

  /** Readings committed here, leased here by their transaction. */
  submit(rows: EvalInput[]): void {
    if (this.hold || rows.length === 0) return;
    const fresh = rows.filter((r) => !this.held.has(r.id));
    for (const r of fresh) this.held.add(r.id);
    const batch: Batch<C> = { ids: fresh.map((r) => r.id), ready: Promise.resolve() };
    batch.ready = this.hooks.evaluate(fresh).then(
      (c) => {
        batch.candidates = c;
      },
      (err: unknown) => {
        this.failed(err, "evaluating rules failed (the readings are evaluated again)");
        batch.candidates = null;
      },
    );
    this.queue.push(batch);
    this.pumping ??= this.pump().finally(() => {
      this.pumping = null;
    });
  }

  private async pump(): Promise<void> {
    while (this.queue.length > 0) {
      await (this.queue[0] as Batch<C>).ready;
      const taken: Batch<C>[] = [];
      while (this.queue.length > 0 && (this.queue[0] as Batch<C>).candidates !== undefined) taken.push(this.queue.shift() as Batch<C>);
      const failed = taken.filter((b) => b.candidates === null).flatMap((b) => b.ids);
      const good = taken.filter((b) => b.candidates !== null);
      const ids = good.flatMap((b) => b.ids);
      if (failed.length > 0) {
        this.stats.released += failed.length;
        await this.repo.release(this.lease, failed).catch((err: unknown) => this.failed(err, "releasing rule evaluations failed"));
      }
      if (ids.length > 0) {
        const now = this.clock();
        const admitted: { c: C; f: RuleFiring }[] = [];
        for (const b of good) {
          for (const c of b.candidates ?? []) {
            const f = this.hooks.admit(c, now);
            if (f) admitted.push({ c, f });
          }
        }
        let outcomes: FiringOutcome[] | null = null;
        try {
          outcomes = await this.repo.consume(this.lease, ids, admitted.map((a) => a.f), this.leaseMs);
          if (outcomes) this.stats.consumed += ids.length;
          else this.stats.released += ids.length;
        } catch (err) {
          // Store unreachable: the rows stay leased here until their lease lapses, then any instance claims them.
          this.failed(err, "recording rule evaluations failed (the readings are evaluated again)");
        }
        this.hooks.fired(admitted, outcomes);
      }
      for (const id of [...failed, ...ids]) this.held.delete(id);
    }
  }

  /**
   * Rows were just committed unleased (the embedded store, whose ingest thread does not return
   * their ids): claims them now, after the poll under way if there is one.
   */
  claimNow(): void {
    if (this.hold || this.stopped) return;
    if (this.polling) this.again ??= true;
    else this.poll(true);
  }

  /** `fresh`: rows this process just committed, not rows taken over from a dead one. */
  private poll(fresh = false): void {
    if (this.stopped || this.polling) return;
    this.again = null;
    this.polling = this.repo
      .claim(this.lease, this.clock(), this.leaseMs, CLAIM_BATCH)
      .then((rows) => {
        // A full batch: more may wait.
        if (rows.length === CLAIM_BATCH) this.again ??= fresh;
        const mine = rows.filter((r) => !this.held.has(r.id));
        if (mine.length === 0 || this.stopped) return;
        if (!fresh) this.stats.claimed += mine.length;
        if (!fresh) this.log.info({ rows: mine.length }, "evaluating the rules of readings whose instance lost its lease");
        this.submit(mine.map((r) => ({ id: r.id, guid: r.guid, userId: r.user_id, DA: r.da, ts: r.ts, prev: r.prev, cause: r.cause })));
      })
      .catch((err: unknown) => this.failed(err, "claiming rule evaluations failed"))
      .finally(() => {
        this.polling = null;
        if (this.again !== null) this.poll(this.again);
      });
  }

  private failed(err: unknown, message: string): void {
    const now = Date.now();
    if (now - this.lastError < 10_000) return;
    this.lastError = now;
    this.log.warn({ err }, message);
  }
}
