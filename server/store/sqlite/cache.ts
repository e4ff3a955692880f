/**
 * Read caches of the SQLite store for the two lookups on the ingest path: token -> row and
 * GUID -> device id. The store is owned by one process, so every write that could make an entry
 * stale goes through this module's repos, which invalidate it. Both maps are bounded.
 */
import type { TokenRow } from "../types.js";

const MAX_ENTRIES = 200_000;

export class StoreCache {
  readonly tokens = new Map<string, TokenRow>();
  readonly devices = new Map<string, number>();
  /** node id -> the last_active last written for it (blocks' activity is kept to the second). */
  readonly touched = new Map<string, number>();

  rememberToken(row: TokenRow): void {
    if (this.tokens.size >= MAX_ENTRIES) this.tokens.clear();
    this.tokens.set(row.hash, row);
  }

  rememberDevice(guid: string, id: number): void {
    if (this.devices.size >= MAX_ENTRIES) this.devices.clear();
    this.devices.set(guid, id);
  }

  forgetTokens(): void {
    this.tokens.clear();
  }

  forgetDevices(): void {
    this.devices.clear();
    this.touched.clear();
  }

  /** True when the block's last_active must be written for `now` (first time, or a second later). */
  shouldTouch(node: string, now: number): boolean {
    const last = this.touched.get(node);
    if (last !== undefined && now - last < 1000) return false;
    if (this.touched.size >= MAX_ENTRIES) this.touched.clear();
    this.touched.set(node, now);
    return true;
  }
}
