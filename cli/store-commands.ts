/**
 * `blockkit migrate`: bring a store's schema up to date (PostgreSQL before the instances start).
 * `blockkit export` / `blockkit import`: move an embedded SQLite store into PostgreSQL
 * (server/store/dump.ts): `blockkit export --data DIR > dump`, `blockkit import --db URL < dump`.
 * `export` never migrates: a store whose schema is not this build's is refused (store-open.ts), and
 * `migrate` refuses one that a newer blockkit wrote (server/store/schema.ts).
 */
import type { Command } from "commander";
import type { PartitionInterval } from "../server/store/postgres/partition-ranges.js";
import { dbUrl, partitionInterval, storeLocation } from "./options.js";
import { schemaRefusal } from "./store-open.js";

export function registerStoreCommands(program: Command): void {
  program
    .command("migrate")
    .description("apply the store's pending schema migrations and exit (servers also do it at start)")
    .option("--data <dir>", "directory of the embedded SQLite store", "./data")
    .option("--db <url>", "store URL: sqlite:DIR, a directory or postgres://… (default: BLOCKKIT_DB, else --data)", dbUrl)
    .option(
      "--partition-interval <interval>",
      "PostgreSQL: make the readings partitions day, week or month from the next partition on, for every instance (default: keep the database's)",
      partitionInterval,
    )
    .action(async (flags: { data: string; db?: string; partitionInterval?: PartitionInterval }) => {
      const { url } = storeLocation(flags);
      const { parseStoreUrl } = await import("../server/store/url.js");
      const where = parseStoreUrl(url);
      if (where.kind === "postgres") {
        const { createPool, splitSchema } = await import("../server/store/postgres/db.js");
        const { migratePostgres, shownUrl } = await import("../server/store/postgres/index.js");
        const { ReadingPartitions } = await import("../server/store/postgres/partitions.js");
        const pool = createPool({ url: where.url, max: 2 });
        try {
          const ran = await migratePostgres(pool, splitSchema(where.url).schema, { where: `at ${shownUrl(where.url)}` }).catch((err: unknown) => {
            throw schemaRefusal(err);
          });
          const partitions = new ReadingPartitions(pool, { interval: flags.partitionInterval, change: true });
          await partitions.prepare();
          process.stdout.write(`${ran.length > 0 ? `applied ${ran.join(", ")}` : "up to date"}\nreadings partitioned by ${partitions.interval}\n`);
        } finally {
          await pool.end();
        }
        return;
      }
      const { openSqliteStore } = await import("../server/store/sqlite/index.js");
      // Opening the embedded store applies its migrations.
      let store: ReturnType<typeof openSqliteStore>;
      try {
        store = openSqliteStore({ dataDir: where.dir, ingestThread: false });
      } catch (err) {
        throw schemaRefusal(err);
      }
      await store.close();
      process.stdout.write("up to date\n");
    });

  program
    .command("export")
    .description("write every table of an embedded SQLite store to standard output (JSON lines), for blockkit import")
    .option("--data <dir>", "directory of the embedded SQLite store", "./data")
    .option("--db <url>", "store URL: sqlite:DIR or a directory (default: BLOCKKIT_DB, else --data)", dbUrl)
    .action(async (flags: { data: string; db?: string }) => {
      const { parseStoreUrl } = await import("../server/store/url.js");
      const where = parseStoreUrl(storeLocation(flags).url);
      if (where.kind !== "sqlite") throw new Error("export reads an embedded SQLite store: give --data DIR or --db sqlite:DIR");
      const { openSqliteStore } = await import("../server/store/sqlite/index.js");
      const { exportSqlite } = await import("../server/store/dump.js");
      let store: ReturnType<typeof openSqliteStore>;
      try {
        store = openSqliteStore({ dataDir: where.dir, ingestThread: false, create: false, schema: "current" });
      } catch (err) {
        throw schemaRefusal(err);
      }
      try {
        let pending = "";
        const counts = exportSqlite(store.db, (line) => {
          pending += `${line}\n`;
          if (pending.length > 1 << 16) {
            process.stdout.write(pending);
            pending = "";
          }
        });
        await new Promise<void>((resolve, reject) => process.stdout.write(pending, (err) => (err ? reject(err) : resolve())));
        process.stderr.write(`exported ${Object.entries(counts).map(([t, n]) => `${t} ${n}`).join(", ")}\n`);
      } finally {
        await store.close();
      }
    });

  program
    .command("import")
    .description("load a dump made by blockkit export from standard input into an empty PostgreSQL store")
    .requiredOption("--db <url>", "the PostgreSQL store: postgres://…", dbUrl)
    .action(async (flags: { db: string }) => {
      const { parseStoreUrl } = await import("../server/store/url.js");
      const where = parseStoreUrl(flags.db);
      if (where.kind !== "postgres") throw new Error("import writes into PostgreSQL: give --db postgres://…");
      const { createInterface } = await import("node:readline");
      const { importIntoPostgres } = await import("../server/store/dump.js");
      // The iterator is made now: lines read before the import starts consuming them are buffered,
      // not lost (readline emits them whether or not anyone iterates yet).
      const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
      const counts = await importIntoPostgres(where.url, { [Symbol.asyncIterator]: () => lines });
      process.stderr.write(`imported ${Object.entries(counts).map(([t, n]) => `${t} ${n}`).join(", ")}\n`);
    });
}
