/**
 * What a BlockAgent (agent.ts) is made with, BlockAgentOptions, and what it tells of itself: its
 * state and its counters (AgentStats).
 */
import type { Logger } from "pino";
import type { Dispatcher } from "undici";
import type { BlockClient } from "../../protocol/block-client.js";
import type { BackoffOptions } from "./backoff.js";
import type { RouterCounters, SnapshotSource } from "./router.js";
import type { Outbox, TokenStore } from "./types.js";
import type { UplinkOptions } from "./uplink.js";

/** The agent's loops that back off after a failure, each with a Backoff of its own. */
export type BackoffLoop = "activate" | "uplink" | "poll";

export interface BlockAgentOptions {
  /** The block's node id: 12-64 alphanumerics. */
  nodeId: string;
  /** REST root including `/rest/v0`. Ignored when `client` is given. */
  baseUrl?: string;
  /** `{stream_url}` for snapshot uploads. Ignored when `client` is given. */
  streamUrl?: string;
  /** undici dispatcher shared by many agents (simulator). Ignored when `client` is given. */
  dispatcher?: Dispatcher;
  /** A ready client (tests, or a custom dispatcher setup). */
  client?: BlockClient;
  outbox: Outbox;
  tokens: TokenStore;
  /** A user access token for the direct activation flow; without it the two-legged flow is used. */
  userToken?: string;
  /** Snapshot source for commands to D 1004. */
  camera?: SnapshotSource;
  uplink?: UplinkOptions;
  /**
   * Backoff of the poller, the uplink and activation. Default 1 s to 2 min, reset after 30 s healthy.
   * Its `random` (default Math.random) is the jitter of all three, unless `jitter` is given.
   */
  backoff?: BackoffOptions;
  /**
   * The jitter of each loop (uniform [0, 1)), one source per loop, in place of backoff.random: the
   * simulator gives each block's loops streams of its seed, so that a run's waits after failures are
   * the seed's, and a loop's do not depend on when the other loops failed.
   */
  jitter?: (loop: BackoffLoop) => () => number;
  /** The loops' waits after a failure, `loop` saying whose (a seam for tests). Default: a timer (backoff.ts sleep). */
  sleep?: (ms: number, signal: AbortSignal, loop: BackoffLoop) => Promise<void>;
  /**
   * The simulator's lean path (submitLean): a lone reading is sent at once without being stored
   * when the uplink would send it alone anyway, and `acked(ts)` hears its acknowledgement (the
   * outbox's own listener hears the stored ones; it is counted in stats() but has no `acked`
   * event). Needs a RestorableOutbox (the in-memory one).
   * Never for a gateway: its readings must be stored durably before they are acknowledged to their
   * link.
   */
  lean?: { acked(ts: number): void };
  /** How often entries past the outbox's age limit are dropped, ms. Default 60 000. */
  expireEveryMs?: number;
  logger?: Logger;
  clock?: () => number;
}

export type AgentState = "idle" | "activating" | "online" | "offline" | "stopped";

export interface AgentStats extends RouterCounters {
  state: AgentState;
  submitted: number;
  acked: number;
  invalid: number;
  rejected: number;
  /** Outbox entries dropped by its bounds (rows, bytes, age). */
  dropped: number;
  /** Readings refused (not stored, not acknowledged) because the outbox could not write. */
  refused: number;
  /** The outbox refuses appends now (disk full or failing). */
  outboxFull: boolean;
  outboxRows: number;
  outboxBytes: number;
  activations: number;
  revocations: number;
  /** Times the server became reachable again after being unreachable. */
  reconnects: number;
  /** Epoch ms of the last answer from the server, null before the first. */
  lastServerContact: number | null;
  /**
   * Answers 429 (rate limited): those the agent asks again after their Retry-After (uploads of
   * readings, commands polls, activation requests), and camera snapshot uploads (dropped, not sent again).
   */
  throttled: { uplink: number; poll: number; activate: number; snapshot: number };
}
