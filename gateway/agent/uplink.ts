/**
 * Drains the outbox to the server, oldest first: one request at a time in steady state, so the order
 * per device is the order of arrival; a backlog goes out as several batches at once. Every event
 * carries its original TIMESTAMP and its idempotency KEY, so a batch that is sent again after a lost
 * answer is not stored twice. Entries leave the outbox only once acknowledged. Pacing caps the
 * replay rate after an outage so a hub coming back does not flood the server. Three layers: how one
 * cycle is sent and what its answers do (acks, refusals, backoff, pacing) is in uplink-send.ts; when
 * cycles are sent (the loop and its fast path) in uplink-loop.ts; this file adds the lean path.
 *
 * The simulator's lean path (sendLean) goes one step further than the fast path for a block's lone
 * reading: when the fast path would send it alone (the loop parked, no cycle under way, the outbox
 * empty, a token), it is sent from the caller's turn without being stored (behind a full window,
 * once a slot frees), and its acknowledgement only counted. A failure stores it first in line and
 * goes on as the fast cycle's failure (retry with backoff, one by one after a refusal), so nothing
 * acknowledged is lost.
 */
import type { BlockClientError, PostCallbacks, WireReading } from "../../protocol/block-client.js";
import type { OutboxEntry, RestorableOutbox } from "./types.js";
import { UplinkLoop } from "./uplink-loop.js";

export { MAX_BATCH_BYTES, splitRuns } from "./runs.js";
export type { SendWindow, UplinkHooks, UplinkOptions } from "./uplink-send.js";

export class Uplink extends UplinkLoop {
  /** The lean path's reading waiting or in flight (not stored): its wire form, id, kind and time. */
  private leanWire: WireReading | null = null;
  private leanId = 0;
  private leanHeartbeat = false;
  private leanTs = 0;
  private readonly leanTookFn = (took: boolean): void => this.leanTook(took);
  /** The lean reading's call is out: its outcome comes to leanDone (no promise to await). */
  private leanOut = false;
  /** stop()'s wait for that outcome. */
  private leanWaiter: (() => void) | null = null;
  private readonly leanDone: PostCallbacks = {
    posted: () => {
      try {
        this.leanOk();
      } finally {
        this.leanReturned();
      }
    },
    postFailed: (err: BlockClientError) => {
      this.inFlight = this.leanFailed(err);
      this.leanReturned();
    },
  };

  /** The outbox of a lean path under way (canLean() found it restorable). */
  private get leanOutbox(): RestorableOutbox {
    return this.restorable as RestorableOutbox;
  }

  /**
   * Whether a lone reading may take the lean path now (see above): the loop parked, no cycle
   * under way, the outbox empty, a token. sendLean() must follow at once.
   */
  canLean(): boolean {
    return this.restorable !== null && this.parked && !this.busy && !this.queued && !this.halted && this.restorable.rows === 0 && this.hooks.token() !== null;
  }

  /**
   * Sends a reading (data, or a heartbeat of one) after canLean() said true, with the KEY and
   * TIMESTAMP it would have been stored with; its acknowledgement goes to the `leanAcked` hook.
   * Behind a full window it waits for a slot as the fast path does, still not stored; if readings
   * were stored meanwhile it joins them (first, by its id) and they leave as one batch.
   */
  sendLean(heartbeat: boolean, wire: WireReading, ts: number): void {
    this.busy = true;
    this.leanWire = wire;
    this.leanId = this.leanOutbox.reserve();
    this.leanHeartbeat = heartbeat;
    this.leanTs = ts;
    if (!this.window || this.window.tryTake()) return this.leanSend();
    if (this.window.wait === undefined) {
      this.inFlight = this.window.take(this.signal).then(this.leanTookFn);
      return;
    }
    // Without a promise either (the fleet's window): stop() waits for the outcome as for a call's.
    this.inFlight = undefined;
    this.leanOut = true;
    this.window.wait(this.signal, this.leanTookFn);
  }

  private leanTook(took: boolean): void {
    this.leanOut = false;
    if (took && !this.halted && this.leanOutbox.rows === 0 && this.hooks.token() !== null) this.leanSend();
    else {
      // Stopped, or readings came meanwhile (or the token went): stored, and on as the fast path's wait.
      this.leanStore();
      this.took(took);
    }
    // Not sent (a call out would say so): stop() may go on.
    if (!this.leanOut) this.leanReturned();
  }

  private leanSend(): void {
    const token = this.hooks.token() as string;
    const wire = this.leanWire as WireReading;
    this.one.started = this.clock();
    this.inFlight = undefined;
    this.leanOut = true;
    // By callbacks, not promises: a promise and a reaction each for the client, its link and here
    // were, per reading, what the lean path still spent beyond the bare loop's one.
    if (this.leanHeartbeat) this.client.heartbeatTo(token, [wire], this.signal, this.leanDone);
    else this.client.dataTo(token, wire, this.signal, this.leanDone);
  }

  /** The lean call's outcome was handled: stop() may go on. */
  private leanReturned(): void {
    this.leanOut = false;
    const waiter = this.leanWaiter;
    this.leanWaiter = null;
    waiter?.();
  }

  private leanOk(): void {
    this.leanWire = null;
    try {
      this.leanSucceeded(this.leanTs);
    } finally {
      this.window?.give();
    }
    if (!this.halted && this.leanOutbox.rows === 0) {
      // Nothing came meanwhile: no pacing to do, and the fast path would find nothing to send.
      this.busy = false;
      this.inFlight = undefined;
      return;
    }
    this.one.sent = 1;
    this.one.retry = false;
    this.fastSettled(this.one);
  }

  /** Stored first in line, then what a failed fast cycle does (its slot is the fast cycle's). */
  private leanFailed(err: unknown): Promise<void> {
    this.run1 = [this.leanStore()];
    return this.run1Failed(err);
  }

  /** The lean reading goes into the outbox, before what was stored since it was taken. */
  private leanStore(): OutboxEntry {
    const w = this.leanWire as WireReading;
    this.leanWire = null;
    const entry: OutboxEntry = { id: this.leanId, kind: this.leanHeartbeat ? "heartbeat" : "data", G: w.G, V: w.V, D: w.D, DA: w.DA, value: null, ts: this.leanTs, key: w.KEY as string };
    this.leanOutbox.restore(entry);
    return entry;
  }

  /** stop() waits for the lean call's outcome before it waits for inFlight (leanFailed sets it). */
  protected override outstanding(): Promise<void> | undefined {
    return this.leanOut ? new Promise<void>((resolve) => (this.leanWaiter = resolve)) : undefined;
  }
}
