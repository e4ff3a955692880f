/**
 * The schema version of a store, compared with the one this build knows. A store's version is the
 * list of migrations recorded in its `schema_migrations` (named "NNN-what", applied in order), shown
 * as the last of them; this build's is the last of its own list. Both stores use it:
 *  - the server (and `blockkit migrate`) applies what is pending, but refuses a store that records a
 *    migration this build does not know: a newer blockkit wrote it, and running on it would mean
 *    running on tables this code does not understand (there is no downgrade);
 *  - the one-shot commands (`users`, `apps`, `export`) never migrate: they refuse a store that is
 *    behind as well as one that is ahead, since changing the schema under a running server of the
 *    older version would break it (docs/operations.md, "Upgrades").
 */
import { BLOCKKIT_VERSION } from "../../protocol/version.js";

/** What a store's recorded migrations are, next to this build's. */
export interface SchemaState {
  /** The migrations the store records, in this build's order, then the unknown ones sorted. */
  applied: string[];
  /** This build's migrations the store lacks. */
  pending: string[];
  /** The store's migrations this build does not know: it was written by a newer blockkit. */
  unknown: string[];
  /** The last of this build's migrations. */
  latest: string;
}

export function schemaState(recorded: Iterable<string>, known: readonly string[]): SchemaState {
  const names = new Set(recorded);
  const knownSet = new Set(known);
  const unknown = [...names].filter((n) => !knownSet.has(n)).sort();
  return {
    applied: [...known.filter((n) => names.has(n)), ...unknown],
    pending: known.filter((n) => !names.has(n)),
    unknown,
    latest: known.at(-1) ?? "none",
  };
}

/** The store's version as printed: its last migration in order (an unknown one sorts last). */
export function storeVersion(s: SchemaState): string {
  return [...s.applied].sort().at(-1) ?? "none";
}

/** A store whose schema this program will not use as it is; `message` names both versions and what to do. */
export class SchemaError extends Error {
  override readonly name = "SchemaError";
  constructor(
    readonly kind: "behind" | "ahead" | "missing",
    message: string,
  ) {
    super(message);
    // A refusal, not a fault of the code: the start's log line carries the message, not a trace.
    this.stack = `${this.name}: ${message}`;
  }
}

/** This build as named in the messages. */
const THIS = `this blockkit (${BLOCKKIT_VERSION})`;

/** The refusal of a store with migrations this build does not know (server, migrate, commands alike). */
export function newerSchema(where: string, s: SchemaState): SchemaError {
  return new SchemaError(
    "ahead",
    `the store ${where} has schema ${storeVersion(s)}, newer than ${THIS} knows (${s.latest}; unknown migrations: ${s.unknown.join(", ")}): ` +
      "a newer blockkit wrote it. Use that version (or newer), or restore a backup taken before the upgrade; the store was not changed",
  );
}

/**
 * The refusal of a command that does not migrate (`users`, `apps`, `export`) when the schema is not
 * this build's; nothing when it is. `migrateCommand` is the command that brings this store up to date.
 */
export function requireCurrent(where: string, s: SchemaState, migrateCommand: string): void {
  if (s.unknown.length > 0) throw newerSchema(where, s);
  if (s.pending.length === 0) return;
  throw new SchemaError(
    "behind",
    `the store ${where} has schema ${storeVersion(s)}, older than ${THIS} expects (${s.latest}; pending: ${s.pending.join(", ")}). ` +
      `This command does not migrate, so that a server of the older version running on it keeps working. ` +
      `Upgrade the store first: \`${migrateCommand}\` (take a backup before), or start the new server, which migrates at start`,
  );
}
