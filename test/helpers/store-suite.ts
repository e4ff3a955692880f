/**
 * The set-up of the shared store suite (test/server/store-suite-*.test.ts): the implementations it
 * runs against, a fresh store with the user alice for each test, and a data event of its node.
 * Apart because the suite is split by what it tests (accounts, events and history, automation) and
 * every part runs on the same set-up. `store` and `userId` are set before each test (ES module live
 * bindings: an importer reads the current store).
 */
import { afterEach, beforeEach } from "vitest";
import type { IngestEvent, Store } from "../../server/store/types.js";
import { dataEvent } from "./events.js";
import { PG_AVAILABLE } from "./pg.js";
import { STORES, type StoreUnderTest, postgresDayStore } from "./stores.js";

export const NODE = "SUITENODE0001";
export const T0 = Date.UTC(2024, 0, 31, 23, 59, 30);

// The PostgreSQL store once more with daily partitions: the same answers whatever the interval.
export const SUITE_STORES: StoreUnderTest[] = PG_AVAILABLE ? [...STORES, postgresDayStore] : STORES;

export let store: Store;
let dispose: () => Promise<void>;
export let userId: number;

/** Opens a fresh store of `impl` with the user alice before each test of the calling suite, and disposes of it after. */
export function openEach(impl: StoreUnderTest): void {
  beforeEach(async () => {
    ({ store, dispose } = await impl.open());
    userId = (await store.users.create("alice", "hash", 1)).id;
  });
  afterEach(async () => {
    await dispose();
  });
}

export const ev = (G: string, DA: string, extra: Partial<IngestEvent> = {}): IngestEvent => dataEvent(NODE, userId, G, DA, { ts: T0, ...extra });
