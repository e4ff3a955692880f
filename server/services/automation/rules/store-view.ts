/**
 * The engine's view of device values: the last DA of every device that an active rule watches,
 * kept from committed events, so evaluating a rule never reads the store on the ingest path. A
 * GUID that starts being watched is loaded once from the store.
 */
import type { Store } from "../../../store/types.js";

export class DeviceValues {
  private readonly values = new Map<string, string | undefined>();

  constructor(private readonly store: Store) {}

  has(guid: string): boolean {
    return this.values.has(guid);
  }

  get(guid: string): string | undefined {
    return this.values.get(guid);
  }

  /** Records a new value; returns the previous one. */
  set(guid: string, da: string): string | undefined {
    const prev = this.values.get(guid);
    this.values.set(guid, da);
    return prev;
  }

  /** Starts watching a GUID with its stored last value (none for a device that does not exist yet). */
  async watch(guid: string): Promise<void> {
    if (this.values.has(guid)) return;
    const row = await this.store.devices.byGuid(guid);
    if (!this.values.has(guid)) this.values.set(guid, row?.last_da ?? undefined);
  }

  forget(guid: string): void {
    this.values.delete(guid);
  }

  get size(): number {
    return this.values.size;
  }
}
