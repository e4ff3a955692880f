/** In-process Bus: a map of channel -> handlers, no serialisation, synchronous delivery. */
import type { Bus, BusHandler } from "./types.js";

export class LocalBus implements Bus {
  private readonly channels = new Map<string, Set<BusHandler>>();

  publish(channel: string, message: string): void {
    const handlers = this.channels.get(channel);
    if (!handlers) return;
    for (const h of [...handlers]) h(message);
  }

  subscribe(channel: string, handler: BusHandler): () => void {
    let handlers = this.channels.get(channel);
    if (!handlers) {
      handlers = new Set();
      this.channels.set(channel, handlers);
    }
    handlers.add(handler);
    return () => {
      const set = this.channels.get(channel);
      if (!set) return;
      set.delete(handler);
      if (set.size === 0) this.channels.delete(channel);
    };
  }

  hasSubscribers(channel: string): boolean {
    return this.channels.has(channel);
  }

  async close(): Promise<void> {
    this.channels.clear();
  }
}
