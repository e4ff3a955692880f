/**
 * The Bus wakes waiters across server processes: held long-polls, activation requests, snapshot
 * waiters. In one process it is an in-memory fan-out; a scale-out deployment swaps in a networked
 * implementation behind the same interface.
 */
export type BusHandler = (message: string) => void;

export interface Bus {
  /**
   * Delivers `message` to every subscriber of `channel` in every process (this one included). A
   * wake-up signal: state lives in the store, and a subscriber re-reads it.
   */
  publish(channel: string, message: string): void;
  /** Returns the function that unsubscribes. */
  subscribe(channel: string, handler: BusHandler): () => void;
  /**
   * A networked Bus calls these after it reconnected: messages sent meanwhile are lost, so each
   * holder of state derived from them (caches, waiters) re-reads it. Absent on an in-process Bus.
   */
  onResync?(handler: () => void): () => void;
  close(): Promise<void>;
}
