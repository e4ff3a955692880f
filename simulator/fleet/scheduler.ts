/**
 * One timer for the whole fleet: a binary min-heap of due times. Ten thousand blocks with a few
 * devices each would otherwise mean tens of thousands of live timers re-armed every second; here a
 * single setTimeout waits for the earliest job and runs every job that is due.
 */

export interface ScheduledJob {
  cancel(): void;
}

/** A heap entry is its own handle: one object per scheduled run. */
class Job implements ScheduledJob {
  cancelled = false;
  constructor(
    readonly due: number,
    readonly seq: number,
    readonly run: () => void,
  ) {}
  cancel(): void {
    this.cancelled = true;
  }
}

export class Scheduler {
  private heap: Job[] = [];
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Number.POSITIVE_INFINITY;
  private stopped = false;

  constructor(private readonly clock: () => number = Date.now) {}

  /** Runs `run` after `delayMs`. */
  after(delayMs: number, run: () => void): ScheduledJob {
    const job = new Job(this.clock() + Math.max(0, delayMs), this.seq++, run);
    this.push(job);
    this.arm();
    return job;
  }

  get size(): number {
    return this.heap.length;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.heap = [];
  }

  private arm(): void {
    if (this.stopped) return;
    const first = this.heap[0];
    if (!first || first.due >= this.timerDue) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerDue = first.due;
    this.timer = setTimeout(() => this.fire(), Math.max(0, first.due - this.clock()));
  }

  private fire(): void {
    this.timer = undefined;
    this.timerDue = Number.POSITIVE_INFINITY;
    const now = this.clock();
    // Jobs scheduled by jobs run on a later turn, even with delay 0, so a loop cannot starve I/O.
    const limit = this.seq;
    while (this.heap.length > 0 && (this.heap[0] as Job).due <= now && (this.heap[0] as Job).seq < limit) {
      const job = this.pop();
      if (!job.cancelled) job.run();
    }
    this.arm();
  }

  private less(a: Job, b: Job): boolean {
    return a.due < b.due || (a.due === b.due && a.seq < b.seq);
  }

  private push(job: Job): void {
    const h = this.heap;
    h.push(job);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i] as Job, h[p] as Job)) break;
      swap(h, i, p);
      i = p;
    }
  }

  private pop(): Job {
    const h = this.heap;
    const top = h[0] as Job;
    const last = h.pop() as Job;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l] as Job, h[m] as Job)) m = l;
        if (r < h.length && this.less(h[r] as Job, h[m] as Job)) m = r;
        if (m === i) break;
        swap(h, i, m);
        i = m;
      }
    }
    return top;
  }
}

/** Swaps two heap slots (no array literal per swap: ten thousand pushes and pops a second). */
function swap(h: Job[], a: number, b: number): void {
  const t = h[a] as Job;
  h[a] = h[b] as Job;
  h[b] = t;
}
