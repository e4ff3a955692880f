/**
 * Store types of devices and what comes from and goes to them: the device rows, the block events
 * committed by ingest (with their meta patches and evaluation leases), the history read back, and
 * queued commands. Apart from types.ts so that each group of repositories reads on its own;
 * types.ts re-exports them with the Store they make up.
 */
import type { FoldFn, Interval } from "../../protocol/history.js";

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
