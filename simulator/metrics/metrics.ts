/**
 * The run's measurements: counters, errors and throttled answers by kind, latency histograms and per-second rate series
 * (for the sparklines). Everything is aggregated as it happens; the TUI and the report read
 * snapshots, so a hundred thousand events cost counter increments, not objects.
 */
import { Latency, type LatencySummary } from "./histogram.js";

/** Seconds of history kept for the sparklines. */
export const SERIES_LENGTH = 60;

export interface Counters {
  events_sent: number;
  events_acked: number;
  errors: number;
  /**
   * Answers 429 (the server rate-limits the credential) to calls that are asked again after a
   * wait: backpressure, not errors (activation, uplink, commands poll, the user's claims, command
   * PUTs and callback registrations).
   */
  throttled: number;
  commands_sent: number;
  commands_received: number;
  callbacks_received: number;
  snapshots_sent: number;
}

export interface RateSeries {
  sent: number[];
  acked: number[];
  errors: number[];
  commands: number[];
  callbacks: number[];
}

export interface MetricsSnapshot {
  counters: Counters;
  errors_by_kind: Record<string, number>;
  /** Throttled answers by the call that got them (`activate`, `uplink`, `poll`, `claim`, `command_put`, `callback_register`). */
  throttled_by_kind: Record<string, number>;
  ingest: LatencySummary;
  command: LatencySummary;
  callback: LatencySummary;
  /** Per-second rates, oldest first. */
  series: RateSeries;
}

const emptyCounters = (): Counters => ({
  events_sent: 0,
  events_acked: 0,
  errors: 0,
  throttled: 0,
  commands_sent: 0,
  commands_received: 0,
  callbacks_received: 0,
  snapshots_sent: 0,
});

export class Metrics {
  readonly counters: Counters = emptyCounters();
  readonly errorsByKind = new Map<string, number>();
  readonly throttledByKind = new Map<string, number>();
  readonly ingest = new Latency();
  readonly command = new Latency();
  readonly callback = new Latency();
  private readonly series: RateSeries = { sent: [], acked: [], errors: [], commands: [], callbacks: [] };
  private last: Counters = emptyCounters();
  /** While false (warm-up), latencies are not recorded; counters still are. */
  recording = true;
  /** Past pauses of the run, [from, to] epoch ms, and the current one's start. */
  private readonly pauses: [number, number][] = [];
  private pausedSince: number | null = null;

  sent(n = 1): void {
    this.counters.events_sent += n;
  }

  acked(latencyMs: number, n = 1): void {
    this.counters.events_acked += n;
    if (this.recording) for (let i = 0; i < n; i++) this.ingest.record(latencyMs);
  }

  /**
   * A reading submitted at `submittedAt` was acknowledged at `now`: its ingest latency is the time
   * between, less the time the run was paused meanwhile (a paused fleet holds its readings).
   */
  ackedAt(submittedAt: number, now: number): void {
    let latency = now - submittedAt;
    if (this.pauses.length > 0 || this.pausedSince !== null) latency -= this.pausedWithin(submittedAt, now);
    this.acked(latency);
  }

  /** The run is paused from `now` (the TUI's p key) until resumed(). */
  paused(now: number): void {
    this.pausedSince ??= now;
  }

  resumed(now: number): void {
    if (this.pausedSince === null) return;
    this.pauses.push([this.pausedSince, now]);
    if (this.pauses.length > 100) this.pauses.shift();
    this.pausedSince = null;
  }

  private pausedWithin(from: number, to: number): number {
    let sum = 0;
    const overlap = (a: number, b: number): number => Math.max(0, Math.min(b, to) - Math.max(a, from));
    for (const [a, b] of this.pauses) sum += overlap(a, b);
    if (this.pausedSince !== null) sum += overlap(this.pausedSince, to);
    return sum;
  }

  error(kind: string): void {
    this.counters.errors++;
    this.errorsByKind.set(kind, (this.errorsByKind.get(kind) ?? 0) + 1);
  }

  /** A call of `kind` was answered 429 and will be asked again: counted apart from the errors. */
  throttled(kind: string): void {
    this.counters.throttled++;
    this.throttledByKind.set(kind, (this.throttledByKind.get(kind) ?? 0) + 1);
  }

  commandSent(): void {
    this.counters.commands_sent++;
  }

  commandReceived(roundTripMs: number): void {
    this.counters.commands_received++;
    if (this.recording) this.command.record(roundTripMs);
  }

  callbackReceived(latencyMs: number): void {
    this.counters.callbacks_received++;
    if (this.recording) this.callback.record(latencyMs);
  }

  /** Closes one second of the rate series (the controller calls it every second). */
  tick(): void {
    const c = this.counters;
    const push = (arr: number[], v: number): void => {
      arr.push(v);
      if (arr.length > SERIES_LENGTH) arr.shift();
    };
    push(this.series.sent, c.events_sent - this.last.events_sent);
    push(this.series.acked, c.events_acked - this.last.events_acked);
    push(this.series.errors, c.errors - this.last.errors);
    push(this.series.commands, c.commands_received - this.last.commands_received);
    push(this.series.callbacks, c.callbacks_received - this.last.callbacks_received);
    this.last = { ...c };
  }

  /** Drops the warm-up's latencies so percentiles describe the steady run. */
  resetLatencies(): void {
    this.ingest.reset();
    this.command.reset();
    this.callback.reset();
  }

  snapshot(): MetricsSnapshot {
    return {
      counters: { ...this.counters },
      errors_by_kind: Object.fromEntries(this.errorsByKind),
      throttled_by_kind: Object.fromEntries(this.throttledByKind),
      ingest: this.ingest.summary(),
      command: this.command.summary(),
      callback: this.callback.summary(),
      series: {
        sent: [...this.series.sent],
        acked: [...this.series.acked],
        errors: [...this.series.errors],
        commands: [...this.series.commands],
        callbacks: [...this.series.callbacks],
      },
    };
  }
}
