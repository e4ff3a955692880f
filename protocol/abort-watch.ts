/**
 * Aborts for many calls that share one long-lived signal. An agent's loop keeps one AbortSignal for
 * its life and makes thousands of calls with it, so each signal gets one `abort` listener (on its
 * first call) and a set of the calls in flight, instead of an addEventListener/removeEventListener
 * pair per call (Node's EventTarget made that pair a tenth of the simulator's CPU at ten thousand
 * calls a second). The block transports (undici-transport.ts here, the simulator's simulator/transport/exchange.ts) use it.
 */

/** The error a call aborted by `signal` fails with: the signal's reason, or an AbortError. */
export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException("This operation was aborted", "AbortError");
}

/** The calls in flight per signal; when a signal aborts, `onAbort` runs for each of its calls. */
export class AbortWatch<T> {
  private readonly bySignal = new WeakMap<AbortSignal, Set<T>>();

  constructor(private readonly onAbort: (call: T, reason: Error) => void) {}

  add(signal: AbortSignal, call: T): void {
    let set = this.bySignal.get(signal);
    if (!set) {
      const mine = new Set<T>();
      set = mine;
      this.bySignal.set(signal, mine);
      signal.addEventListener(
        "abort",
        () => {
          this.bySignal.delete(signal);
          const reason = abortReason(signal);
          for (const call of [...mine]) this.onAbort(call, reason);
        },
        { once: true },
      );
    }
    set.add(call);
  }

  /** The call settled: its signal's abort no longer concerns it. */
  delete(signal: AbortSignal, call: T): void {
    this.bySignal.get(signal)?.delete(call);
  }
}
