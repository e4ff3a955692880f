/**
 * The one Store interface. Implementations: `sqlite/` (embedded default) and `postgres/` (several
 * instances on one database); `openStore(url)` (index.ts) picks one. Every method is async so that
 * a networked implementation fits the same shape. The types are plain domain values (booleans,
 * parsed JSON objects); each implementation converts to and from its own column types. Domain
 * rules (what a config event does, which block activity is recorded, who may hold a token) live in
 * the services: the store applies what they decided, in one transaction.
 */
import type { RuleHandler, RuleRunJson } from "../../protocol/automation.js";
import type { FoldFn, Interval } from "../../protocol/history.js";

export type TokenKind = "user" | "oauth" | "block" | "vblock";

export interface UserRow {
  id: number;
  name: string;
  password_hash: string | null;
  created: number;
}

export interface TokenRow {
  /** sha256 hex of the token; the token itself is never stored. */
  hash: string;
  kind: TokenKind;
  user_id: number;
  node_id: string | null;
  client_id: string | null;
  created: number;
}

export interface BlockRow {
  node_id: string;
  user_id: number;
  short_name: string;
  date_created: number;
  last_active: number;
  /** Claimed but the token not yet delivered to the block: deliver on activation until this time. */
  token_pending_until: number | null;
}

export interface DeviceRow {
  id: number;
  guid: string;
  user_id: number;
  node_id: string;
  g: string;
  v: number;
  d: number;
  short_name: string | null;
  is_silent: boolean;
  meta: Record<string, unknown>;
  last_da: string | null;
  last_ts: number | null;
  created: number;
}

/** Sets `value` at `path` in a device's meta, creating the objects on the way (one atomic update). */
export interface MetaPatch {
  path: string[];
  value: unknown;
}

/**
 * One block event to commit. The store finds the device by GUID, or creates it for `userId` and
 * `node` from G, V and D; then, with `meta`, applies that patch (a config event; no reading), else
 * records the reading (the device's last value and a history row) unless the event is a config
 * event. `meta` and `touch` are the Ingest service's decisions (services/ingest.ts).
 */
export interface IngestEvent {
  kind: "data" | "heartbeat" | "config";
  userId: number;
  node: string;
  guid: string;
  G: string;
  V: number;
  D: number;
  /** The value as text; for config events the `type`. */
  DA: string;
  /** Numeric value of DA, or null. */
  num: number | null;
  ts: number;
  key?: string | undefined;
  /** Config events: the whole payload (the Ingest service turns it into `meta`). */
  payload?: Record<string, unknown> | undefined;
  /** The change of the device's meta this event makes. */
  meta?: MetaPatch | undefined;
  /** Record the block's activity at this time (ms), creating the block row when missing. */
  touch?: number | undefined;
  /** Apply only to a device that exists: an unknown GUID creates nothing and is answered as a duplicate. */
  existingOnly?: boolean | undefined;
  /** The rules whose actions led to this event (a tickle from a rule's webhook); kept only with its evaluation. */
  cause?: readonly number[] | undefined;
  /**
   * A rule watches this device (services/ingest.ts asks the rule engine): with an EvaluationLease,
   * the store writes the reading's rule evaluation to the durable `rule_evals` in the same
   * transaction (PostgreSQL), leased to the instance that committed it.
   */
  evaluate?: boolean | undefined;
}

/** Who evaluates the rules of a batch's readings first (the committing instance), and for how long. */
export interface EvaluationLease {
  lease: string;
  leaseMs: number;
}

export interface IngestResult {
  deviceId: number;
  created: boolean;
  duplicate: boolean;
  /** Its device's callback delivery was written to the durable outbox in this transaction. */
  outboxed?: boolean;
  /**
   * PostgreSQL (several instances): the device's value just before this reading, as committed
   * (null: none), or `stale` when a newer reading was committed before it. Absent on SQLite, whose
   * one instance sees every event itself.
   */
  prev?: string | null;
  stale?: boolean;
  /** The id of this reading's row in `rule_evals` (an `evaluate` reading, not stale; PostgreSQL). */
  evaluation?: number;
}

export interface HistoryQuery {
  from: number;
  to: number;
  interval: Interval | null;
  fn: FoldFn;
}

export interface HistoryPoint {
  t: number;
  v: number | string;
}

export interface CommandRow {
  id: number;
  node_id: string;
  guid: string;
  g: string;
  v: number;
  d: number;
  da: string;
  created: number;
  expires: number;
}

export interface CallbackRow {
  device_id: number;
  url: string;
  secret: string;
  created: number;
}

export type SubDeviceCategory = "rf" | "webhook" | "sms";
export type SubDeviceType = "actuator" | "sensor";

export interface SubDeviceRow {
  id: number;
  device_id: number;
  /** The short id shown to users, unique within the device. */
  sid: string;
  category: SubDeviceCategory;
  type: SubDeviceType;
  short_name: string;
  data: string;
  url: string | null;
  /** sha256 hex of a webhook sensor's tickle token. */
  token_hash: string | null;
  created: number;
}

export interface RuleRow {
  id: number;
  user_id: number;
  short_name: string;
  preconditions: RuleHandler[];
  actions: RuleHandler[];
  /** Seconds. */
  timeout: number;
  suspended: boolean;
  created: number;
}

export interface RuleRunRow {
  rule_id: number;
  ts: number;
  ok: boolean;
  /** What each action did. */
  steps: RuleRunJson["steps"];
  error: string | null;
}

export interface SnapshotRow {
  device_id: number;
  seq: number;
  content_type: string;
  body: Buffer;
  created: number;
}

export interface UsersRepo {
  create(name: string, passwordHash: string | null, now: number): Promise<UserRow>;
  byName(name: string): Promise<UserRow | null>;
  byId(id: number): Promise<UserRow | null>;
  count(): Promise<number>;
  setPassword(id: number, passwordHash: string): Promise<void>;
}

/** Which tokens a revocation matches: every given field. */
export type TokenMatch = Partial<Pick<TokenRow, "user_id" | "kind" | "node_id" | "client_id" | "hash">>;

export interface TokensRepo {
  put(row: TokenRow): Promise<void>;
  /** Always reads the store: the read cache is the auth service's (services/auth.ts). */
  find(hash: string): Promise<TokenRow | null>;
  /** Deletes the tokens matching all fields of `match` and stores `row`, in one transaction; returns the hashes deleted. */
  replace(match: TokenMatch, row: TokenRow): Promise<string[]>;
  /** Deletes every token matching all given fields; returns the hashes deleted. */
  revoke(match: TokenMatch): Promise<string[]>;
  list(match: Partial<Pick<TokenRow, "user_id" | "kind" | "node_id" | "client_id">>): Promise<TokenRow[]>;
  /**
   * The hashes of tokens deleted after position `after` (null: none, only the current position),
   * by any process on the store, and the position to ask from next time. Stores whose instances
   * hear of revocations otherwise (PostgreSQL: the Bus) may leave it out.
   */
  revokedSince?(after: number | null): Promise<{ last: number; hashes: string[] }>;
}

export interface SessionRow {
  /** sha256 hex of the session id; the id itself lives only in the browser's cookie. */
  hash: string;
  user_id: number;
  created: number;
  expires: number;
}

export interface OAuthAppRow {
  client_id: string;
  /** The user who registered the application. */
  user_id: number;
  name: string;
  redirect_uri: string;
  /** sha256 hex of the client secret. */
  secret_hash: string;
  created: number;
}

export interface OAuthCodeRow {
  /** sha256 hex of the authorization code. */
  hash: string;
  client_id: string;
  user_id: number;
  redirect_uri: string;
  expires: number;
  used: boolean;
  /** Hash of the access token the code was exchanged for (revoked when the code is replayed). */
  token_hash: string | null;
}

export interface SessionsRepo {
  put(row: SessionRow): Promise<void>;
  find(hash: string): Promise<SessionRow | null>;
  remove(hash: string): Promise<void>;
  /** Deletes sessions that expired before `now`; returns how many. */
  prune(now: number): Promise<number>;
}

export interface OAuthAppsRepo {
  put(row: OAuthAppRow): Promise<void>;
  get(clientId: string): Promise<OAuthAppRow | null>;
  list(userId: number): Promise<OAuthAppRow[]>;
  /** Removes the application with its codes (not its tokens: see TokensRepo.revoke). */
  remove(clientId: string): Promise<boolean>;
}

export interface OAuthCodesRepo {
  put(row: Omit<OAuthCodeRow, "used" | "token_hash">): Promise<void>;
  /**
   * Marks an unused code used and returns it; returns `{replayed}` with the row when it had been
   * used already, and null when it is unknown.
   */
  consume(hash: string): Promise<{ row: OAuthCodeRow; replayed: boolean } | null>;
  setToken(hash: string, tokenHash: string): Promise<void>;
  prune(before: number): Promise<number>;
}

export interface KeysRepo {
  /** The named server key, created from `make()` on first use. */
  getOrCreate(name: string, make: () => string, now: number): Promise<string>;
}

export interface BlocksRepo {
  get(nodeId: string): Promise<BlockRow | null>;
  list(userId: number): Promise<BlockRow[]>;
  /** Creates or re-claims the block for the user. */
  claim(nodeId: string, userId: number, now: number, pendingUntil: number | null): Promise<BlockRow>;
  /**
   * Claims the block for the user with no token pending, replacing its block token with `token`, in
   * one transaction; returns the block and the hashes of the tokens replaced.
   */
  claimWithToken(nodeId: string, userId: number, now: number, token: TokenRow): Promise<{ block: BlockRow; revoked: string[] }>;
  setPending(nodeId: string, pendingUntil: number | null): Promise<void>;
  /**
   * Clears the block's pending token if it is still pending at `now` and returns the block; null
   * when there is none (one statement: of two instances delivering, only one issues the token).
   */
  takePending(nodeId: string, now: number): Promise<BlockRow | null>;
  /** Records that a block waits for activation until `until` (seen by every instance). */
  markAwaiting(nodeId: string, until: number): Promise<void>;
  /** Until when the block awaits activation; null when it never did. */
  awaitingUntil(nodeId: string): Promise<number | null>;
  /** Removes the block with its devices, their history, queued commands and its tokens; returns the token hashes deleted. */
  remove(nodeId: string): Promise<string[]>;
}

export interface DevicesRepo {
  list(userId: number): Promise<DeviceRow[]>;
  byGuid(guid: string): Promise<DeviceRow | null>;
  setShortName(id: number, name: string): Promise<void>;
  /** Applies one change to the device's meta atomically (no lost update between two writers). */
  patchMeta(id: number, patch: MetaPatch): Promise<void>;
  /** Removes the device and everything stored about it. */
  remove(id: number): Promise<void>;
}

export interface EventsRepo {
  /**
   * Commits a batch durably; resolves once it is on disk. Results are in the batch's order. May be
   * called again before the previous call settled: batches are applied and settle in call order.
   */
  commit(batch: IngestEvent[], evaluation?: EvaluationLease): Promise<IngestResult[]>;
  /**
   * Forgets idempotency keys older than `before` (epoch ms), in transactions of a bounded number of
   * keys; once `signal` is aborted, returns after the current one (the rest stays for the next call).
   * Resolves with how many were forgotten.
   */
  pruneKeys(before: number, signal?: AbortSignal): Promise<number>;
}

export interface HistoryRepo {
  count(deviceId: number, from: number, to: number): Promise<number>;
  query(deviceId: number, q: HistoryQuery): Promise<HistoryPoint[]>;
}

export interface CommandsRepo {
  add(row: Omit<CommandRow, "id">): Promise<number>;
  pending(nodeId: string, now: number): Promise<CommandRow[]>;
  remove(ids: number[]): Promise<void>;
  expire(now: number): Promise<number>;
}

export interface CallbacksRepo {
  get(deviceId: number): Promise<CallbackRow | null>;
  set(row: CallbackRow): Promise<void>;
  remove(deviceId: number): Promise<boolean>;
}

export interface SubDevicesRepo {
  add(row: Omit<SubDeviceRow, "id">): Promise<SubDeviceRow>;
  get(deviceId: number, sid: string): Promise<SubDeviceRow | null>;
  byDevices(deviceIds: number[]): Promise<SubDeviceRow[]>;
  /** Sub-devices of a device of a category and type whose data or sid equals `key`. */
  match(deviceId: number, category: SubDeviceCategory, type: SubDeviceType, key: string): Promise<SubDeviceRow[]>;
  update(row: SubDeviceRow): Promise<void>;
  remove(id: number): Promise<boolean>;
  addActuation(id: number, ts: number): Promise<void>;
  actuations(id: number, q: Omit<HistoryQuery, "fn">): Promise<HistoryPoint[]>;
  actuationCount(id: number, from: number, to: number): Promise<number>;
}

export interface RulesRepo {
  create(row: Omit<RuleRow, "id">): Promise<RuleRow>;
  get(id: number): Promise<RuleRow | null>;
  list(userId: number): Promise<RuleRow[]>;
  count(userId: number): Promise<number>;
  /** Every rule of every user (the engine's index at start). */
  all(): Promise<RuleRow[]>;
  update(row: RuleRow): Promise<void>;
  setSuspended(id: number, suspended: boolean): Promise<void>;
  remove(id: number): Promise<boolean>;
  /** Records runs (one transaction) and keeps only the newest `keep` runs of each rule. */
  addRuns(runs: RuleRunRow[], keep: number): Promise<void>;
  runs(ruleId: number): Promise<RuleRunRow[]>;
}

/** A callback delivery leased from the durable outbox, with what its POST needs. */
export interface OutboxDelivery {
  id: number;
  /** X-Blockkit-Delivery: the same on every attempt, on whichever instance. */
  delivery: string;
  device_id: number;
  user_id: number;
  attempts: number;
  guid: string;
  g: string;
  v: number;
  d: number;
  node_id: string;
  da: string;
  ts: number;
  url: string;
  secret: string;
}

/**
 * Callback deliveries kept in the store: written in the transaction of their event (a reading of a
 * device with a callback) and leased by one instance at a time, so that a delivery survives the
 * loss of the instance doing it (PostgreSQL) or of the process (SQLite, whose one process takes a
 * row of another lease over at once: sqlite/outbox.ts). Only the head of each device's queue can
 * be leased: one attempt per device at a time, in order. A deleted callback takes its deliveries.
 */
export interface CallbackOutbox {
  /**
   * Leases (to `lease`, until now + leaseMs) due heads of device queues whose lease is free or
   * expired, oldest first: at most `perUser` of one user, none of the users in `busy`, `limit` in
   * all. SQLite (one process) leases with each head the deliveries after it, a prefix of the
   * device's queue, which the caller sends in order; a failed one goes back with the rest released.
   */
  claim(lease: string, now: number, leaseMs: number, limit: number, perUser: number, busy: number[]): Promise<OutboxDelivery[]>;
  /** Delivered or given up: gone. */
  remove(ids: number[]): Promise<void>;
  /** Failed: due again at `nextAt`, lease released (any instance may retry it). */
  retry(id: number, lease: string, attempts: number, nextAt: number): Promise<void>;
  /** Drops the newest deliveries beyond the bounds (every row counts, leased ones are kept); the counts per reason. */
  trim(maxPerDevice: number, maxPerUser: number, maxTotal: number, now: number): Promise<{ device: number; user: number; total: number }>;
  /** Extends the leases of these deliveries still held by `lease` (waiting for a slot or in flight). */
  renew(lease: string, ids: number[], now: number, leaseMs: number): Promise<void>;
  /** Deliveries waiting (leased or not). */
  depth(): Promise<number>;
}

/** A rule run in progress, kept in the store under a lease. */
export interface RuleJobRow {
  id: number;
  rule_id: number;
  fired_at: number;
  cause: number[];
  /** The first action not finished yet. */
  step: number;
  /** What the finished actions did (the run's history record). */
  steps: unknown[];
  /** When a sleep at `step` ends (a run taken over sleeps the rest only). */
  sleep_until: number | null;
}

/**
 * Runs of rules that survive the loss of the instance running them: a firing inserts a job leased
 * to the instance that fired it; it records its progress after each action; an instance whose lease
 * lapsed (killed) leaves the job to another one, which resumes at the first unfinished action.
 */
export interface RuleJobsRepo {
  /**
   * The firing of rule `ruleId` at `now` as a job leased to `lease`: null when the rule fired less
   * than `timeoutMs` before (any instance) or is gone. Claims the timeout in the same statement.
   */
  fire(ruleId: number, now: number, timeoutMs: number, cause: readonly number[], lease: string, leaseMs: number): Promise<number | null>;
  /** Records progress; false when the job is no longer leased to `lease` (taken over: stop). */
  progress(id: number, lease: string, step: number, steps: unknown[], sleepUntil: number | null): Promise<boolean>;
  finish(id: number): Promise<void>;
  /** Extends the leases of these jobs still held by `lease` (runs in progress here). */
  renew(lease: string, ids: number[], now: number, leaseMs: number): Promise<void>;
  /**
   * Leases up to `limit` jobs whose lease expired, each the oldest job of its rule: the jobs of one
   * rule run one at a time, in firing order, across instances.
   */
  takeOver(lease: string, now: number, leaseMs: number, limit: number): Promise<RuleJobRow[]>;
}

/** A committed reading whose rules have not been evaluated yet (`rule_evals`). */
export interface RuleEvalRow {
  id: number;
  device_id: number;
  user_id: number;
  guid: string;
  ts: number;
  da: string;
  /** The device's value before this reading, as committed (null: none). */
  prev: string | null;
  cause: number[];
}

/** A firing decided by an evaluation: its job is inserted with the evaluation's removal. */
export interface RuleFiring {
  ruleId: number;
  firedAt: number;
  timeoutMs: number;
  cause: readonly number[];
}

/**
 * What became of a firing: the id of its job, to run here; `behind` another instance's job of the
 * rule (the job waits in the store for its turn); `refused` by the rule's timeout (any instance).
 */
export type FiringOutcome = number | "behind" | "refused";

/**
 * Rule evaluation once per event across instances, surviving the loss of the instance doing it.
 * The ingest transaction writes one row per watched reading (EventsRepo.commit with an
 * EvaluationLease), leased to the committing instance, which evaluates it at once; rows whose lease
 * lapsed (their instance died) are claimed by another one. A device's rows are evaluated in commit
 * order: a row is consumed only with (or after) every earlier row of its device.
 */
export interface RuleEvalsRepo {
  /**
   * Leases up to `limit` rows whose lease lapsed, oldest first; of each device only rows with no
   * earlier row still leased elsewhere.
   */
  claim(lease: string, now: number, leaseMs: number, limit: number): Promise<RuleEvalRow[]>;
  /**
   * The evaluation of rows `ids` is done: in one transaction, each firing becomes a job leased to
   * `lease` (claiming its rule's timeout, as RuleJobsRepo.fire) and the rows are deleted. Null, and
   * nothing done, when a row is no longer leased to `lease` or an earlier row of its device is
   * still waiting: the rows are released (their lease lapses at once) to be claimed in order. A job
   * `behind` an older job of its rule that another lease holds is released too, for the instance
   * that takes it over when it is the oldest (RuleJobsRepo.takeOver); it is not run here.
   */
  consume(lease: string, ids: number[], firings: RuleFiring[], leaseMs: number): Promise<FiringOutcome[] | null>;
  /** Lets any instance claim these rows now (a clean stop). */
  release(lease: string, ids: number[]): Promise<void>;
  /** Rows waiting (leased or not). */
  depth(): Promise<number>;
}

export interface SnapshotsRepo {
  /** Keeps the camera's latest upload; returns its sequence number. */
  put(deviceId: number, contentType: string, body: Buffer, now: number): Promise<number>;
  get(deviceId: number): Promise<SnapshotRow | null>;
}

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
