/** `blockkit migrate`: bring a store's schema up to date (PostgreSQL before the instances start). */
import type { Command } from "commander";
import { dbUrl, storeLocation } from "./options.js";

export function registerStoreCommands(program: Command): void {
  program
    .command("migrate")
    .description("apply the store's pending schema migrations and exit (servers also do it at start)")
    .option("--data <dir>", "directory of the embedded SQLite store", "./data")
    .option("--db <url>", "store URL: sqlite:DIR, a directory or postgres://… (default: BLOCKKIT_DB, else --data)", dbUrl)
    .action(async (flags: { data: string; db?: string }) => {
      const { url } = storeLocation(flags);
      const { parseStoreUrl } = await import("../server/store/url.js");
      const where = parseStoreUrl(url);
      if (where.kind === "postgres") {
        const { createPool, splitSchema } = await import("../server/store/postgres/db.js");
        const { migratePostgres } = await import("../server/store/postgres/index.js");
        const { ReadingPartitions } = await import("../server/store/postgres/partitions.js");
        const pool = createPool({ url: where.url, max: 2 });
        try {
          const ran = await migratePostgres(pool, splitSchema(where.url).schema);
          await new ReadingPartitions(pool, null).maintain(Date.now());
          process.stdout.write(ran.length > 0 ? `applied ${ran.join(", ")}\n` : "up to date\n");
        } finally {
          await pool.end();
        }
        return;
      }
      const { openSqliteStore } = await import("../server/store/sqlite/index.js");
      // Opening the embedded store applies its migrations.
      const store = openSqliteStore({ dataDir: where.dir, ingestThread: false });
      await store.close();
      process.stdout.write("up to date\n");
    });
}
