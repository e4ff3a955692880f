/**
 * The store implementations the shared suite (test/server/store-suite-*.test.ts) runs against. Each
 * entry opens a fresh, empty store and cleans up after itself.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../server/store/index.js";
import type { IngestEvent, Store } from "../../server/store/types.js";
import { PG_AVAILABLE, pgSchemaUrl } from "./pg.js";

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

export const postgresStore: StoreUnderTest = {
  name: "postgres",
  async open() {
    const { url, drop } = pgSchemaUrl();
    const store = await openStore(url, { poolSize: 4 });
    return {
      store,
      dispose: async () => {
        await store.close();
        await drop();
      },
    };
  },
};

/** PostgreSQL with daily readings partitions (the shared suite's history folds across them). */
export const postgresDayStore: StoreUnderTest = {
  name: "postgres, daily partitions",
  async open() {
    const { url, drop } = pgSchemaUrl();
    const store = await openStore(url, { poolSize: 4, partitionInterval: "day" });
    return {
      store,
      dispose: async () => {
        await store.close();
        await drop();
      },
    };
  },
};

/** Every implementation that can run here (PostgreSQL only when reachable: see pg.ts). */
export const STORES: StoreUnderTest[] = PG_AVAILABLE ? [sqliteStore, postgresStore] : [sqliteStore];

/** A data event of device `${node}_0_0_${D}` (numeric DA), for the store tests of leased work. */
export const dataEvent = (userId: number, node: string, D: number, DA: string, ts: number, evaluate?: boolean, cause?: number[]): IngestEvent => ({
  kind: "data",
  userId,
  node,
  guid: `${node}_0_0_${D}`,
  G: "0",
  V: 0,
  D,
  DA,
  num: Number(DA),
  ts,
  evaluate,
  cause,
});
