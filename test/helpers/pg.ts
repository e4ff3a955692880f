/**
 * PostgreSQL for tests: BLOCKKIT_TEST_PG, else DATABASE_URL, else the local server
 * (postgres://postgres@127.0.0.1:5432/test, trust auth). Each store gets a schema of its own, dropped
 * when disposed. When the server cannot be reached the PostgreSQL tests are left out with a visible
 * message, unless BLOCKKIT_REQUIRE_PG=1 (CI), where that is an error.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

export const PG_BASE_URL = process.env.BLOCKKIT_TEST_PG ?? process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

async function probe(): Promise<string | null> {
  const client = new pg.Client({ connectionString: PG_BASE_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return null;
  } catch (err) {
    return (err as Error).message;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const problem = await probe();
if (problem !== null) {
  const message = `PostgreSQL at ${PG_BASE_URL} is unreachable (${problem})`;
  if (process.env.BLOCKKIT_REQUIRE_PG === "1") throw new Error(`${message}, and BLOCKKIT_REQUIRE_PG=1`);
  process.stderr.write(`\n!!! ${message}: the PostgreSQL tests are SKIPPED (set BLOCKKIT_REQUIRE_PG=1 to fail instead)\n\n`);
}

/** True when the PostgreSQL tests run. */
export const PG_AVAILABLE = problem === null;

/** A fresh schema's store URL and the function that drops the schema. */
export function pgSchemaUrl(): { url: string; schema: string; drop: () => Promise<void> } {
  const schema = `bk_test_${process.pid}_${randomBytes(4).toString("hex")}`;
  const u = new URL(PG_BASE_URL);
  u.searchParams.set("schema", schema);
  return {
    url: u.toString(),
    schema,
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_BASE_URL });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}
