/**
 * The one Store interface. Implementations: `sqlite/` (embedded default) and `postgres/` (several
 * instances on one database); `openStore(url)` (index.ts) picks one. Every method is async so that
 * a networked implementation fits the same shape. The types are plain domain values (booleans,
 * parsed JSON objects); each implementation converts to and from its own column types. Domain
 * rules (what a config event does, which block activity is recorded, who may hold a token) live in
 * the services: the store applies what they decided, in one transaction.
 *
 * The rows and repositories are in one file per group, and importers take them from here:
 * - `types-accounts.ts`: users, tokens, blocks, browser sessions, OAuth applications and codes, keys;
 * - `types-devices.ts`: devices, the events ingest commits, history, queued commands;
 * - `types-automation.ts`: callbacks, sub-devices, rules and their runs, camera snapshots;
 * - `types-leases.ts`: the work leased to one instance at a time (callback outbox, rule jobs and
 *   evaluations).
 */
import type { BlocksRepo, KeysRepo, OAuthAppsRepo, OAuthCodesRepo, SessionsRepo, TokensRepo, UsersRepo } from "./types-accounts.js";
import type { CallbacksRepo, RulesRepo, SnapshotsRepo, SubDevicesRepo } from "./types-automation.js";
import type { CommandsRepo, DevicesRepo, EventsRepo, HistoryRepo } from "./types-devices.js";
import type { CallbackOutbox, RuleEvalsRepo, RuleJobsRepo } from "./types-leases.js";

export type * from "./types-accounts.js";
export type * from "./types-automation.js";
export type * from "./types-devices.js";
export type * from "./types-leases.js";

export interface Store {
  readonly kind: "sqlite" | "postgres";
  // Accounts on the web (sessions, OAuth applications and codes, server keys).
  sessions: SessionsRepo;
  oauthApps: OAuthAppsRepo;
  oauthCodes: OAuthCodesRepo;
  keys: KeysRepo;
  users: UsersRepo;
  tokens: TokensRepo;
  blocks: BlocksRepo;
  devices: DevicesRepo;
  events: EventsRepo;
  history: HistoryRepo;
  commands: CommandsRepo;
  callbacks: CallbacksRepo;
  subdevices: SubDevicesRepo;
  rules: RulesRepo;
  snapshots: SnapshotsRepo;
  /** Durable callback deliveries, leased across instances (PostgreSQL) or by the one process (SQLite). */
  outbox: CallbackOutbox;
  ruleJobs: RuleJobsRepo;
  ruleEvals: RuleEvalsRepo;
  close(): Promise<void>;
}
