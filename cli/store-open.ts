/**
 * How the one-shot store commands (`users`, `apps`, `export`) open the store: without migrating. A
 * newer command line run beside an older server must not change that server's schema under it, so a
 * schema behind this build's is refused as well as one ahead of it (server/store/schema.ts), with
 * exit code 2 and a message naming both versions and what to do; `blockkit migrate` and the server
 * are what migrate.
 */
import type { Store } from "../server/store/types.js";
import { CliError } from "./errors.js";

/** A store whose schema is not this build's becomes a refusal (exit 2, no pointer to --help); any other error is left as it is. */
export function schemaRefusal(err: unknown): unknown {
  const e = err as { name?: unknown; kind?: unknown; message?: unknown } | null;
  if (e?.name === "SchemaError" && (e.kind === "behind" || e.kind === "ahead")) return new CliError(String(e.message), 2, false);
  return err;
}

/** Opens the store at `url` for a one-shot command: no ingest thread, no migration; `create` makes a new store where there is none. */
export async function openCommandStore(url: string, create: boolean): Promise<Store> {
  const { openStore } = await import("../server/store/index.js");
  try {
    return await openStore(url, { ingestThread: false, create, schema: "current", warn: (message) => process.stderr.write(`blockkit: ${message}\n`) });
  } catch (err) {
    throw schemaRefusal(err);
  }
}
