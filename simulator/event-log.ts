/**
 * The run's log of errors and chaos events for the TUI's log pane and the headless stderr lines.
 * A ring buffer; past `maxPerSecond` lines a second the rest are counted, not kept, so a storm of
 * identical failures cannot flood the terminal or memory.
 */

export type LogLevel = "info" | "warn" | "error";

export interface LogEntry {
  t: number;
  level: LogLevel;
  text: string;
}

export class EventLog {
  private readonly entries: LogEntry[] = [];
  private second = 0;
  private inSecond = 0;
  /** Lines not kept because of the per-second cap. */
  suppressed = 0;
  private readonly listeners: ((e: LogEntry) => void)[] = [];

  constructor(
    private readonly capacity = 200,
    private readonly maxPerSecond = 20,
    private readonly clock: () => number = Date.now,
  ) {}

  add(level: LogLevel, text: string): void {
    const t = this.clock();
    const s = Math.floor(t / 1000);
    if (s !== this.second) {
      this.second = s;
      this.inSecond = 0;
    }
    if (++this.inSecond > this.maxPerSecond) {
      this.suppressed++;
      return;
    }
    const e = { t, level, text };
    this.entries.push(e);
    if (this.entries.length > this.capacity) this.entries.shift();
    for (const l of this.listeners) l(e);
  }

  onEntry(listener: (e: LogEntry) => void): void {
    this.listeners.push(listener);
  }

  /** The last `n` entries, oldest first. */
  tail(n: number): LogEntry[] {
    return this.entries.slice(-n);
  }
}
