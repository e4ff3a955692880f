/**
 * BlockAgent: one block of the block protocol. The gateway runs one; the simulator runs many.
 *
 * Construct it with a node id, the server's URLs, an Outbox and a TokenStore (see types.ts; the
 * gateway passes SqliteOutbox + FileTokenStore, the simulator MemoryOutbox + MemoryTokenStore).
 *
 * - `start()` loads the token; without one it activates (direct with `userToken`, else the held
 *   two-legged GET retried until a user claims the node), saves the token, then runs the uplink
 *   and the command poller. It resolves at once; it does not wait for activation (listen for
 *   `activated`). A 401/403 anywhere clears the token, emits `revoked`, logs an error and goes back
 *   to activation; readings keep accumulating in the outbox meanwhile.
 * - `submit(reading, link?)` / `submitMany(readings, link?)`: how a link hands readings over. Each
 *   reading is stored in the outbox (fresh idempotency KEY, its time) before the call returns, and
 *   leaves it only once the server acknowledged it; an invalid one is counted, never thrown.
 *   `store()` also says when the outbox refused them (disk full): the link must not ack them.
 * - `addLink(target)`: registers a CommandTarget. A command goes to the link that last submitted a
 *   reading of that device, else to the first link whose `owns(cmd)` is true; a command to a
 *   camera (D 1004) goes to the `camera` snapshot source when one is given. Unroutable commands
 *   are counted and logged.
 * - `stop()` ends the long-poll and the uplink, clears every timer; the outbox is closed by its owner.
 * - Events: `state` (AgentState), `activated`, `revoked` (reason), `acked` (n), `dropped` (n),
 *   `rejected` (entry, message), `command` (cmd, target name or null), `snapshot` (guid, bytes).
 * - `stats()`: counters for /metrics and the simulator.
 */
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import pino, { type Logger } from "pino";
import type { Dispatcher } from "undici";
import { BlockClient, type BlockClientError } from "../../protocol/block-client.js";
import { isPort } from "../../protocol/guid.js";
import { MAX_DA_LENGTH } from "../../protocol/payloads.js";
import { Activator } from "./activator.js";
import { Backoff, type BackoffOptions } from "./backoff.js";
import { CommandPoller } from "./poller.js";
import { CommandRouter, type RouterCounters, type SnapshotSource } from "./router.js";
import { RefusalLog } from "./refusals.js";

export type { SnapshotSource };
import { MIN_TIMESTAMP } from "../../protocol/payloads.js";
import type { CommandTarget, NewOutboxEntry, Outbox, Reading, RestorableOutbox, TokenStore } from "./types.js";
import { Uplink, type UplinkOptions } from "./uplink.js";

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
  /** Backoff of the poller, the uplink and activation. Default 1 s to 2 min, reset after 30 s healthy. */
  backoff?: BackoffOptions;
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
}


export class BlockAgent extends EventEmitter {
  readonly nodeId: string;
  readonly client: BlockClient;
  private readonly log: Logger;
  private readonly clock: () => number;
  private readonly outbox: Outbox;
  private readonly router: CommandRouter;
  private readonly activator: Activator;
  private readonly uplink: Uplink;
  private readonly poller: CommandPoller;
  private token: string | null = null;
  private state: AgentState = "idle";
  private stopping = false;
  private expireTimer: NodeJS.Timeout | undefined;
  private reachable: boolean | null = null;
  private readonly counters = {
    submitted: 0, acked: 0, invalid: 0, rejected: 0, activations: 0, revocations: 0, reconnects: 0,
  };
  /**
   * Epoch ms of the last answer, NaN before the first: a number field from the start, so that the
   * store after every answer writes in place instead of boxing a new number each time.
   */
  private lastContact = Number.NaN;
  private readonly refusals: RefusalLog;
  /** Idempotency keys: a random prefix per agent instance and a counter (unique per node for far longer than 7 days). */
  private readonly keyPrefix = randomBytes(9).toString("base64url");
  private keySeq = 0;

  constructor(private readonly o: BlockAgentOptions) {
    super();
    if (!o || typeof o !== "object") throw new TypeError("BlockAgent: options are required");
    if (!o.outbox) throw new TypeError("BlockAgent: options.outbox is required");
    if (!o.tokens) throw new TypeError("BlockAgent: options.tokens is required");
    if (!o.client && !o.baseUrl) throw new TypeError("BlockAgent: options.baseUrl (or options.client) is required");
    if (o.lean && typeof (o.outbox as Partial<RestorableOutbox>).restore !== "function") throw new TypeError("BlockAgent: options.lean needs an outbox that can restore entries (MemoryOutbox)");
    this.nodeId = o.nodeId;
    this.client = o.client ?? new BlockClient({ baseUrl: o.baseUrl as string, streamUrl: o.streamUrl, nodeId: o.nodeId, dispatcher: o.dispatcher });
    this.log = o.logger ?? pino({ level: "silent" });
    this.clock = o.clock ?? Date.now;
    this.outbox = o.outbox;
    this.refusals = new RefusalLog(this.log, this.clock);
    const backoff = (): Backoff => new Backoff({ ...o.backoff, clock: o.backoff?.clock ?? this.clock });
    // Each loop gets its own literal with every hook (no spread of a shared one): the uplink reads
    // them once per reading, and spread copies of closures made the loads miss their inline caches.
    const token = (): string | null => this.token;
    const unauthorized = (e: BlockClientError): void => this.revoked(e);
    const reachable = (up: boolean, err?: unknown): void => this.setReachable(up, err);
    this.activator = new Activator(this.client, o.tokens, this.log, backoff(), o.userToken);
    this.uplink = new Uplink(this.client, this.outbox, {
      token,
      unauthorized,
      reachable,
      acked: (n) => {
        this.counters.acked += n;
        this.emit("acked", n);
      },
      // A lean reading is counted, without an `acked` event (the simulator has no listener).
      leanAcked: o.lean
        ? (ts) => {
            this.counters.acked++;
            (o.lean as { acked(ts: number): void }).acked(ts);
          }
        : undefined,
      rejected: (entry, err) => {
        this.counters.rejected++;
        this.log.error({ G: entry.G, V: entry.V, D: entry.D, err: err.message }, "the server refused a reading for good: dropped");
        this.emit("rejected", entry, err.message);
      },
    }, this.log, { ...o.uplink, backoff: backoff() });
    this.router = new CommandRouter(this.nodeId, this.client, () => this.token, this.log, (e, ...args) => this.emit(e, ...args), o.camera);
    this.poller = new CommandPoller(this.client, { token, unauthorized, reachable, route: (cmd) => this.router.route(cmd) }, this.log, backoff());
  }

  /** Loads the token (or starts activation), then runs the uplink and the poller. */
  async start(): Promise<void> {
    if (this.state !== "idle" && this.state !== "stopped") return;
    this.stopping = false;
    this.setState("activating");
    this.expireTimer = setInterval(() => this.expire(), this.o.expireEveryMs ?? 60_000);
    this.expireTimer.unref();
    this.expire();
    this.uplink.start();
    this.poller.start();
    this.activate();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.expireTimer) clearInterval(this.expireTimer);
    this.expireTimer = undefined;
    this.activator.stop();
    await Promise.all([this.uplink.stop(), this.poller.stop()]);
    this.setState("stopped");
  }

  /** Registers a link that actuates commands. */
  addLink(target: CommandTarget): void {
    this.router.add(target);
  }

  /** Stores one reading in the outbox; false when invalid. `link` names the link that owns the device. */
  submit(reading: Reading, link?: string): boolean {
    return this.submitMany([reading], link) === 1;
  }

  /** Stores readings in the outbox in one transaction; returns how many were valid and stored (0 when refused). */
  submitMany(readings: Reading[], link?: string): number {
    const n = this.store(readings, link);
    return n === "refused" ? 0 : n;
  }

  /**
   * As submit(), with the `lean` option: a lone reading is sent at once without being stored when
   * the uplink would send it alone anyway (Uplink.canLean: idle, the outbox empty, a token; behind
   * a full window it waits for a slot unstored), with the KEY and time it would have been stored
   * with; else it is stored.
   */
  submitLean(r: Reading): boolean {
    // Anything else (a config event, an invalid reading, a busy uplink) takes the stored path.
    if (this.o.lean === undefined || (r.kind !== undefined && r.kind !== "data" && r.kind !== "heartbeat") || r.value !== undefined || invalid(r) !== null || !this.uplink.canLean()) return this.submit(r);
    const ts = r.ts ?? this.clock();
    const KEY = `${this.keyPrefix}.${(this.keySeq++).toString(36)}`;
    this.counters.submitted++;
    this.uplink.sendLean(r.kind === "heartbeat", ts >= MIN_TIMESTAMP ? { G: r.G, V: r.V, D: r.D, DA: r.DA, TIMESTAMP: ts, KEY } : { G: r.G, V: r.V, D: r.D, DA: r.DA, KEY }, ts);
    return true;
  }

  /** As submitMany, but `refused` when the outbox could not write (disk full): nothing stored, nothing to ack. */
  store(readings: Reading[], link?: string): number | "refused" {
    const now = this.clock();
    const entries: NewOutboxEntry[] = [];
    for (const r of readings) {
      const problem = invalid(r);
      if (problem) {
        this.counters.invalid++;
        this.log.warn({ G: r?.G, V: r?.V, D: r?.D, problem }, "invalid reading skipped");
        continue;
      }
      if (link) this.router.owner(r.G, r.V, r.D, link);
      entries.push({ kind: r.kind ?? "data", G: r.G, V: r.V, D: r.D, DA: r.DA, value: r.value ?? null, ts: r.ts ?? now, key: `${this.keyPrefix}.${(this.keySeq++).toString(36)}` });
    }
    if (entries.length === 0) return 0;
    const dropped = this.refusals.append(this.outbox, entries);
    if (dropped === "refused") return "refused";
    this.counters.submitted += entries.length;
    if (dropped > 0) {
      this.log.warn({ dropped, limits: "outbox full" }, "outbox bounds reached: oldest readings dropped");
      this.emit("dropped", dropped);
    }
    this.uplink.notify();
    return entries.length;
  }

  stats(): AgentStats {
    const ob = this.outbox.stats();
    const outbox = { dropped: ob.dropped, outboxRows: ob.rows, outboxBytes: ob.bytes, outboxFull: ob.full === true };
    return { state: this.state, ...this.counters, ...this.router.counters, refused: this.refusals.total, ...outbox, lastServerContact: Number.isNaN(this.lastContact) ? null : this.lastContact };
  }

  get currentState(): AgentState {
    return this.state;
  }

  private activate(): void {
    this.setState("activating");
    this.activator.run().then(
      (token) => {
        if (token === null || this.stopping) return;
        this.token = token;
        this.counters.activations++;
        this.setReachable(true);
        this.setState("online");
        this.log.info({ nodeId: this.nodeId }, "block activated");
        this.emit("activated");
        this.uplink.notify();
        this.poller.notify();
      },
      (err: unknown) => this.log.error({ err }, "activation stopped on an error"),
    );
  }

  private revoked(err: BlockClientError): void {
    if (this.token === null) return;
    this.token = null;
    this.counters.revocations++;
    this.log.error(
      { nodeId: this.nodeId, status: err.status },
      "THE BLOCK TOKEN WAS REFUSED (revoked or block unpaired): activating again; claim this node again to resume uploads",
    );
    this.emit("revoked", err.message);
    this.activator.forget().then(
      () => {
        if (!this.stopping) this.activate();
      },
      (e: unknown) => {
        this.log.error({ err: e }, "clearing the stored token failed");
        this.activate();
      },
    );
  }

  private expire(): void {
    const n = this.outbox.expire(this.clock());
    if (n > 0) {
      this.log.warn({ dropped: n }, "readings older than the outbox age limit dropped");
      this.emit("dropped", n);
    }
  }

  private setReachable(up: boolean, err?: unknown): void {
    if (up) this.lastContact = this.clock();
    if (this.reachable === up) return;
    if (up && this.reachable === false) this.counters.reconnects++;
    if (!up) this.log.warn({ err: err instanceof Error ? err.message : String(err) }, "server unreachable");
    else if (this.reachable === false) {
      this.log.info("server reachable again");
      // Whoever noticed first wakes the other out of its backoff, so recovery takes seconds, not minutes.
      this.uplink.retryNow();
      this.poller.retryNow();
    }
    this.reachable = up;
    if (this.token) this.setState(up ? "online" : "offline");
  }

  private setState(s: AgentState): void {
    if (this.state === s) return;
    this.state = s;
    this.emit("state", s);
  }
}

function invalid(r: Reading): string | null {
  if (!r || typeof r !== "object") return "not an object";
  if (typeof r.G !== "string" || !isPort(r.G)) return "G must be 1-32 alphanumerics";
  if (!Number.isInteger(r.V) || r.V < 0 || r.V > 999_999_999) return "V must be a whole number";
  if (!Number.isInteger(r.D) || r.D < 0 || r.D > 999_999_999) return "D must be a whole number";
  if (typeof r.DA !== "string" || r.DA.length > MAX_DA_LENGTH) return `DA must be a string of at most ${MAX_DA_LENGTH} characters`;
  if (r.kind === "config" && r.DA.length === 0) return "a config event needs a type";
  if (r.ts !== undefined && !Number.isFinite(r.ts)) return "ts must be epoch ms";
  return null;
}
