/**
 * One command in flight: a command is written, then the next waits until the firmware ACKs it or
 * `ackTimeoutMs` passes. A timeout or a write failure rejects that command's promise; the queue
 * goes on with the next one. Commands wait while the port is down (up to `maxQueued`, oldest
 * refused first) instead of being lost on a short disconnect, and while the line is held quiet
 * (`quiet()`: after an ERROR 1 the firmware may still be answering the rest of a bad line).
 */
import type { Command } from "../../protocol/payloads.js";
import type { NodeDevice } from "../../protocol/serial-frames.js";

interface Item {
  cmd: Pick<Command, "G" | "V" | "D" | "DA">;
  resolve: () => void;
  reject: (e: Error) => void;
}

export interface CommandQueueOptions {
  /** Wait for an ACK, ms. Default 2 000. */
  ackTimeoutMs?: number;
  /** Commands kept while the port is down. Default 100. */
  maxQueued?: number;
}

export class CommandQueue {
  private readonly items: Item[] = [];
  private inFlight: (Item & { timer: NodeJS.Timeout; written: boolean }) | null = null;
  private ready = false;
  /** No write before this time (epoch ms). */
  private quietUntil = 0;
  private quietTimer: NodeJS.Timeout | undefined;
  readonly stats = { sent: 0, acked: 0, timeouts: 0, failed: 0 };
  private readonly ackTimeoutMs: number;
  private readonly maxQueued: number;

  constructor(
    private readonly write: (cmd: Item["cmd"]) => Promise<void>,
    options: CommandQueueOptions = {},
  ) {
    this.ackTimeoutMs = options.ackTimeoutMs ?? 2_000;
    this.maxQueued = options.maxQueued ?? 100;
  }

  /**
   * Queues a command; resolves on its ACK, rejects on timeout, write failure or overflow.
   * `first`: ahead of the queued ones (the version query after a port open).
   */
  send(cmd: Item["cmd"], first = false): Promise<void> {
    return new Promise((resolve, reject) => {
      if (first) this.items.unshift({ cmd, resolve, reject });
      else this.items.push({ cmd, resolve, reject });
      while (this.items.length > this.maxQueued) {
        this.stats.failed++;
        this.items.shift()?.reject(new Error("serial command queue full: oldest command refused"));
      }
      this.pump();
    });
  }

  /** The port is open (true) or not (false). Commands wait while it is not. */
  setReady(ready: boolean): void {
    this.ready = ready;
    this.pump();
  }

  /** An ACK frame arrived; true when it completed the command in flight. */
  ack(d: NodeDevice): boolean {
    const f = this.inFlight;
    if (!f || f.cmd.G !== d.G || f.cmd.V !== d.V || f.cmd.D !== d.D) return false;
    this.finish(null);
    this.stats.acked++;
    return true;
  }

  /**
   * The firmware answered with an ERROR: it ends the command in flight if that command was
   * completely written before (an ERROR that arrives earlier answers something else). True when
   * it ended one.
   */
  fail(reason: string): boolean {
    if (!this.inFlight?.written) return false;
    this.stats.failed++;
    this.finish(new Error(reason));
    return true;
  }

  get pending(): number {
    return this.items.length + (this.inFlight ? 1 : 0);
  }

  /** Holds the next write until the line has been quiet for `ms` (call again to extend). */
  quiet(ms: number): void {
    this.quietUntil = Date.now() + ms;
  }

  /** Refuses everything queued and in flight; clears the timers. */
  clear(reason: string): void {
    if (this.quietTimer) clearTimeout(this.quietTimer);
    this.quietTimer = undefined;
    if (this.inFlight) this.finish(new Error(reason));
    for (const it of this.items.splice(0)) it.reject(new Error(reason));
  }

  private pump(): void {
    if (this.inFlight || !this.ready || this.items.length === 0 || this.quietTimer) return;
    const wait = this.quietUntil - Date.now();
    if (wait > 0) {
      this.quietTimer = setTimeout(() => {
        this.quietTimer = undefined;
        this.pump();
      }, wait);
      return;
    }
    const next = this.items.shift();
    if (!next) return;
    const timer = setTimeout(() => {
      this.stats.timeouts++;
      this.finish(new Error(`no ACK within ${this.ackTimeoutMs} ms`));
    }, this.ackTimeoutMs);
    this.inFlight = { ...next, timer, written: false };
    const current = this.inFlight;
    this.stats.sent++;
    this.write(next.cmd).then(
      () => {
        current.written = true;
      },
      (err: unknown) => {
        if (this.inFlight !== current) return;
        this.stats.failed++;
        this.finish(err instanceof Error ? err : new Error(String(err)));
      },
    );
  }

  private finish(err: Error | null): void {
    const f = this.inFlight;
    if (!f) return;
    clearTimeout(f.timer);
    this.inFlight = null;
    if (err) f.reject(err);
    else f.resolve();
    this.pump();
  }
}
