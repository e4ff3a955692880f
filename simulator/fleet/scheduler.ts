/**
 * One timer for the whole fleet. Ten thousand blocks with a few devices each would otherwise mean
 * tens of thousands of live timers re-armed every second; here a single setTimeout waits for the
 * earliest job and runs every job that is due.
 *
 * Jobs are kept in a timing wheel of 1 ms slots covering the next WHEEL_MS, each slot a list in
 * the order the jobs were scheduled; jobs further out wait in a min-heap and move into the wheel
 * as it turns. Scheduling and running a job cost O(1) either way: a binary heap of ten thousand
 * jobs, walked on every push and pop, touched a dozen scattered job objects each time and was a
 * twentieth of the simulator's CPU. Order: by due millisecond, then by scheduling order (due times
 * within the same millisecond are not told apart).
 */

export interface ScheduledJob {
  /** The millisecond it is due, by the scheduler's clock. */
  readonly due: number;
  cancel(): void;
}

/**
 * A job is its own handle. One that ran may be scheduled again (`after`'s `reuse`): a device's
 * reading a second then costs no new object that lives a second, long enough to be promoted.
 */
class Job implements ScheduledJob {
  cancelled = false;
  /** In the wheel or the heap (cancelled or not). */
  pending = true;
  constructor(
    /** The due millisecond (the clock's, rounded up). */
    public due: number,
    public seq: number,
    public run: () => void,
  ) {}
  cancel(): void {
    this.cancelled = true;
  }
}

/** Slots of the wheel: jobs due within this many ms of the wheel's position live in it. */
const WHEEL_MS = 4096;

export class Scheduler {
  private readonly wheel: (Job[] | undefined)[] = new Array(WHEEL_MS);
  /** The first millisecond not yet run: slot `ms % WHEEL_MS` holds jobs due at `ms`. */
  private cursor: number;
  private inWheel = 0;
  /** Jobs due at or after `cursor + WHEEL_MS`, earliest first. */
  private far: Job[] = [];
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Number.POSITIVE_INFINITY;
  private stopped = false;

  constructor(
    private readonly clock: () => number = Date.now,
    /**
     * The timer fires on multiples of this many ms, running every job due by then: jobs run up to
     * `quantumMs` - 1 ms late, in batches. Default 1 (each job on its millisecond). The fleet uses
     * 10: its ten thousand readings a second then leave in a hundred turns of the event loop, not a
     * thousand, so each turn's requests share their connections' writes (one writev for several
     * requests) and the timer is re-armed a tenth as often.
     */
    private readonly quantumMs = 1,
  ) {
    if (!Number.isInteger(quantumMs) || quantumMs < 1) throw new TypeError(`Scheduler: quantumMs must be a positive integer, got ${String(quantumMs)}`);
    this.cursor = Math.ceil(clock());
  }

  /**
   * Runs `run` after `delayMs`. `reuse`: a job of this scheduler that ran (or whose cancelled run
   * was passed) becomes the new one instead of a new object; one still pending is left alone.
   */
  after(delayMs: number, run: () => void, reuse?: ScheduledJob | null): ScheduledJob {
    const due = Math.max(this.cursor, Math.ceil(this.clock() + Math.max(0, delayMs)));
    let job: Job;
    if (reuse instanceof Job && !reuse.pending) {
      job = reuse;
      job.due = due;
      job.seq = this.seq++;
      job.run = run;
      job.cancelled = false;
      job.pending = true;
    } else job = new Job(due, this.seq++, run);
    this.place(job);
    this.arm(job.due);
    return job;
  }

  /** Its clock's time (what `due` is measured in). */
  now(): number {
    return this.clock();
  }

  get size(): number {
    return this.inWheel + this.far.length;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.wheel.fill(undefined);
    this.inWheel = 0;
    this.far = [];
  }

  private place(job: Job): void {
    if (job.due >= this.cursor + WHEEL_MS) {
      heapPush(this.far, job);
      return;
    }
    const i = job.due % WHEEL_MS;
    const slot = this.wheel[i];
    if (slot) slot.push(job);
    else this.wheel[i] = [job];
    this.inWheel++;
  }

  private arm(job: number): void {
    const due = this.quantumMs === 1 ? job : Math.ceil(job / this.quantumMs) * this.quantumMs;
    if (this.stopped || due >= this.timerDue) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = setTimeout(() => this.fire(), Math.max(0, due - this.clock()));
  }

  private fire(): void {
    this.timer = undefined;
    this.timerDue = Number.POSITIVE_INFINITY;
    const now = this.clock();
    // Jobs scheduled by jobs run on a later turn, even with delay 0, so a loop cannot starve I/O.
    const limit = this.seq;
    while (this.cursor <= now && !this.stopped) {
      if (this.inWheel === 0) {
        // An empty wheel: skip to the next far job or past now, not one millisecond at a time.
        const skipTo = Math.min(now + 1, this.far.length > 0 ? (this.far[0] as Job).due : Number.POSITIVE_INFINITY);
        if (skipTo > this.cursor) {
          this.cursor = skipTo;
          continue;
        }
      }
      this.refill();
      const i = this.cursor % WHEEL_MS;
      const slot = this.wheel[i];
      if (slot) {
        let k = 0;
        for (; k < slot.length; k++) {
          const job = slot[k] as Job;
          if (job.seq >= limit) break;
          this.inWheel--;
          job.pending = false;
          if (!job.cancelled) job.run();
          if (this.stopped) return;
        }
        if (k < slot.length) {
          // Scheduled during this turn for this very millisecond: they wait for the next turn.
          this.wheel[i] = slot.slice(k);
          break;
        }
        // The slot's array stays for the jobs due WHEEL_MS later (no new array a millisecond).
        slot.length = 0;
      }
      this.cursor++;
    }
    const next = this.nextDue();
    if (next !== null) this.arm(next);
  }

  /** Moves the far jobs that the wheel now covers into it. */
  private refill(): void {
    while (this.far.length > 0 && (this.far[0] as Job).due < this.cursor + WHEEL_MS) this.place(heapPop(this.far));
  }

  /** The earliest due millisecond, or null when nothing is scheduled. */
  private nextDue(): number | null {
    if (this.inWheel > 0) {
      for (let ms = this.cursor; ms < this.cursor + WHEEL_MS; ms++) {
        const slot = this.wheel[ms % WHEEL_MS];
        if (slot && slot.length > 0) return ms;
      }
    }
    return this.far.length > 0 ? (this.far[0] as Job).due : null;
  }
}

function less(a: Job, b: Job): boolean {
  return a.due < b.due || (a.due === b.due && a.seq < b.seq);
}

function heapPush(h: Job[], job: Job): void {
  h.push(job);
  let i = h.length - 1;
  while (i > 0) {
    const p = (i - 1) >> 1;
    if (!less(h[i] as Job, h[p] as Job)) break;
    swap(h, i, p);
    i = p;
  }
}

function heapPop(h: Job[]): Job {
  const top = h[0] as Job;
  const last = h.pop() as Job;
  if (h.length > 0) {
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && less(h[l] as Job, h[m] as Job)) m = l;
      if (r < h.length && less(h[r] as Job, h[m] as Job)) m = r;
      if (m === i) break;
      swap(h, i, m);
      i = m;
    }
  }
  return top;
}

/** Swaps two heap slots (no array literal per swap). */
function swap(h: Job[], a: number, b: number): void {
  const t = h[a] as Job;
  h[a] = h[b] as Job;
  h[b] = t;
}
