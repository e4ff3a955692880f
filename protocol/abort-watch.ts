/**
 * Aborts for many calls that share one long-lived signal. An agent's loop keeps one AbortSignal for
 * its life and makes thousands of calls with it, so each signal gets one `abort` listener (on its
 * first call) and a list of the calls in flight, instead of an addEventListener/removeEventListener
 * pair per call (Node's EventTarget made that pair a tenth of the simulator's CPU at ten thousand
 * calls a second). The block transports (undici-transport.ts here, the simulator's
 * simulator/transport/exchange.ts) use it.
 *
 * The list is threaded through the calls themselves (WatchedCall's two links) and hangs off the
 * signal under this watch's own symbol: adding and removing a call is a property load and a few
 * field writes. A Set per signal, found in a WeakMap, cost about 0.3 µs a call (two hash probes in
 * tables spread over ten thousand blocks' memory), measured in a loop over 10,000 signals.
 */

/** The error a call aborted by `signal` fails with: the signal's reason, or an AbortError. */
export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException("This operation was aborted", "AbortError");
}

/** A call an AbortWatch can list: its two links, null while it is not listed. */
export interface WatchedCall {
  watchPrev: WatchedCall | null;
  watchNext: WatchedCall | null;
}

/** The calls in flight of one signal, newest first (the handle add() returns and delete() takes). */
export class WatchList {
  head: WatchedCall | null = null;
}

/** The calls in flight per signal; when a signal aborts, `onAbort` runs for each of its calls. */
export class AbortWatch<T extends WatchedCall> {
  /** The signal's list lives on the signal under this symbol, which nothing else can reach. */
  private readonly key = Symbol("AbortWatch calls");

  constructor(private readonly onAbort: (call: T, reason: Error) => void) {}

  /**
   * Watches `call` until delete(); returns the handle delete() takes, or null when the signal has
   * aborted already (nothing is watched then). Only a signal seen for the first time is asked
   * whether it aborted: a known one's list is taken off it when it aborts.
   */
  add(signal: AbortSignal, call: T): WatchList | null {
    const slot = signal as unknown as Record<symbol, WatchList | undefined>;
    let list = slot[this.key];
    if (list === undefined) {
      if (signal.aborted) return null;
      const mine = new WatchList();
      list = mine;
      slot[this.key] = mine;
      signal.addEventListener(
        "abort",
        () => {
          slot[this.key] = undefined;
          const calls: T[] = [];
          for (let c = mine.head; c !== null; c = c.watchNext) calls.push(c as T);
          const reason = abortReason(signal);
          for (const c of calls) this.onAbort(c, reason);
        },
        { once: true },
      );
    }
    call.watchPrev = null;
    call.watchNext = list.head;
    if (list.head !== null) list.head.watchPrev = call;
    list.head = call;
    return list;
  }

  /** The call settled: its signal's abort no longer concerns it (`list`: what add() returned). */
  delete(list: WatchList, call: T): void {
    const { watchPrev: prev, watchNext: next } = call;
    if (prev !== null) prev.watchNext = next;
    else if (list.head === call) list.head = next;
    else return; // not listed (deleted already)
    if (next !== null) next.watchPrev = prev;
    call.watchPrev = call.watchNext = null;
  }
}
