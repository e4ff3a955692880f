/**
 * The SQLite store's read cache of GUID -> device id, for the ingest path on the main thread. The
 * store is owned by one process, so every deletion that could make an entry stale goes through this
 * module's repos, which clear it. Bounded. (The token cache is the auth service's: services/auth.ts.)
 */
const MAX_ENTRIES = 200_000;

export class StoreCache {
  readonly devices = new Map<string, number>();

  rememberDevice(guid: string, id: number): void {
    if (this.devices.size >= MAX_ENTRIES) this.devices.clear();
    this.devices.set(guid, id);
  }

  forgetDevices(): void {
    this.devices.clear();
  }
}
