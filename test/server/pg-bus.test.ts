/**
 * The Bus on PostgreSQL between two instances: a message published on one reaches a subscriber on
 * the other, and the NOTIFY's transaction, which skips the WAL flush wait, leaves the pool's own
 * connections durable (synchronous_commit stays on for every write that follows).
 */
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgBus } from "../../server/bus/postgres.js";
import { openStore } from "../../server/store/index.js";
import type { PostgresStore } from "../../server/store/postgres/index.js";
import { PG_AVAILABLE, pgSchemaUrl } from "../helpers/pg.js";

describe.runIf(PG_AVAILABLE)("the PostgreSQL Bus", () => {
  let store: PostgresStore;
  let drop: () => Promise<void>;
  let a: PgBus;
  let b: PgBus;
  beforeAll(async () => {
    const s = pgSchemaUrl();
    drop = s.drop;
    // One connection in the pool: the NOTIFY and the next statement share it.
    store = (await openStore(s.url, { poolSize: 1 })) as PostgresStore;
    const log = pino({ level: "silent" });
    a = new PgBus(s.url, store.pool, log);
    b = new PgBus(s.url, store.pool, log);
    await a.start();
    await b.start();
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await store?.close();
    await drop?.();
  });

  it("carries a message from one instance to the other, and the pool stays on synchronous_commit", async () => {
    const heard = new Promise<string>((resolve) => b.subscribe("commands", resolve));
    a.publish("commands", "PGBUS0000001");
    expect(await heard).toBe("PGBUS0000001");
    const setting = await store.pool.query<{ synchronous_commit: string }>("SHOW synchronous_commit");
    expect(setting.rows[0]?.synchronous_commit).toBe("on");
    expect(a.stats.sendFailures).toBe(0);
  });
});
