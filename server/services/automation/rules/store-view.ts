/**
 * The engine's view of device values: the last DA of every device that an active rule watches,
 * kept from committed events, so evaluating a rule never reads the store on the ingest path. A
 * GUID that starts being watched is loaded once from the store.
 */
import type { Store } from "../../../store/types.js";

interface Value {
  da: string | undefined;
  ts: number;
}

export class DeviceValues {
  private readonly values = new Map<string, Value>();

  constructor(private readonly store: Store) {}

  has(guid: string): boolean {
    return this.values.has(guid);
  }

  get(guid: string): string | undefined {
    return this.values.get(guid)?.da;
  }

  /**
   * Records a reading; returns the previous value, or `stale` for a reading older than the latest
   * one (a gateway replaying its outbox), which changes nothing, as in the store's `last_data`.
   */
  set(guid: string, da: string, ts: number): { prev: string | undefined } | "stale" {
    const prev = this.values.get(guid);
    if (prev && ts < prev.ts) return "stale";
    this.values.set(guid, { da, ts });
    return { prev: prev?.da };
  }

  /** Records a value known to be the newest (as committed, PostgreSQL). */
  put(guid: string, da: string, ts: number): void {
    this.values.set(guid, { da, ts });
  }

  /** Starts watching a GUID with its stored last value (none for a device that does not exist yet). */
  async watch(guid: string): Promise<void> {
    if (this.values.has(guid)) return;
    const row = await this.store.devices.byGuid(guid);
    if (!this.values.has(guid)) this.values.set(guid, { da: row?.last_da ?? undefined, ts: row?.last_ts ?? 0 });
  }

  forget(guid: string): void {
    this.values.delete(guid);
  }

  get size(): number {
    return this.values.size;
  }
}
