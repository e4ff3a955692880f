/**
 * The Bus wakes waiters across server processes: held long-polls, activation requests, snapshot
 * waiters. In one process it is an in-memory fan-out; a scale-out deployment swaps in a networked
 * implementation behind the same interface.
 */
export type BusHandler = (message: string) => void;

export interface Bus {
  publish(channel: string, message: string): void;
  /** Returns the function that unsubscribes. */
  subscribe(channel: string, handler: BusHandler): () => void;
  close(): Promise<void>;
}
