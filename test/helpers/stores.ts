/**
 * The store implementations the shared suite (test/server/store-suite.test.ts) runs against. Each
 * entry opens a fresh, empty store and cleans up after itself.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../server/store/index.js";
import type { Store } from "../../server/store/types.js";

export interface StoreUnderTest {
  name: string;
  /** A fresh empty store; `dispose` closes it and removes what it made. */
  open(): Promise<{ store: Store; dispose: () => Promise<void> }>;
}

export const sqliteStore: StoreUnderTest = {
  name: "sqlite",
  async open() {
    const dir = mkdtempSync(join(tmpdir(), "blockkit-suite-"));
    const store = await openStore(`sqlite:${dir}`);
    return {
      store,
      dispose: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

export const STORES: StoreUnderTest[] = [sqliteStore];
