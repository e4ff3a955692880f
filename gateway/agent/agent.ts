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
 * - `submit(reading, link?)` / `submitMany(readings, link?)` / `store()` / `submitLean()`: how a
 *   link hands readings over; the agent's lower layer, AgentInput (agent-input.ts).
 * - `addLink(target)`: registers a CommandTarget. A command goes to the link that last submitted a
 *   reading of that device, else to the first link whose `owns(cmd)` is true; a command to a
 *   camera (D 1004) goes to the `camera` snapshot source when one is given. Unroutable commands
 *   are counted and logged.
 * - `stop()` ends the long-poll and the uplink, clears every timer; the outbox is closed by its owner.
 * - `finishActivation(ms)` stops activating but lets the request in flight be answered first (the
 *   simulator's stop: a request the server received is carried out whether or not anyone waits).
 * - Events: `state` (AgentState), `activated`, `revoked` (reason), `acked` (n), `dropped` (n),
 *   `rejected` (entry, message), `command` (cmd, target name or null), `snapshot` (guid, bytes).
 * - `stats()`: counters for /metrics and the simulator.
 */
import pino, { type Logger } from "pino";
import { BlockClient, type BlockClientError } from "../../protocol/block-client.js";
import { type ActivationEnd, Activator } from "./activator.js";
import { AgentInput } from "./agent-input.js";
import type { AgentState, AgentStats, BackoffLoop, BlockAgentOptions } from "./agent-options.js";
import { Backoff, type Wait, sleep } from "./backoff.js";
import { CommandPoller } from "./poller.js";
import { CommandRouter, type SnapshotSource } from "./router.js";
import { RefusalLog } from "./refusals.js";
import type { CommandTarget, Outbox, RestorableOutbox } from "./types.js";
import { Uplink } from "./uplink.js";

export type { AgentState, AgentStats, BackoffLoop, BlockAgentOptions, SnapshotSource };

export class BlockAgent extends AgentInput {
  readonly nodeId: string;
  readonly client: BlockClient;
  protected readonly log: Logger;
  protected readonly clock: () => number;
  protected readonly outbox: Outbox;
  protected readonly router: CommandRouter;
  private readonly activator: Activator;
  protected readonly uplink: Uplink;
  private readonly poller: CommandPoller;
  private token: string | null = null;
  private state: AgentState = "idle";
  private stopping = false;
  private expireTimer: NodeJS.Timeout | undefined;
  private reachable: boolean | null = null;
  /**
   * Epoch ms of the last answer, NaN before the first: a number field from the start, so that the
   * store after every answer writes in place instead of boxing a new number each time.
   */
  private lastContact = Number.NaN;
  protected readonly refusals: RefusalLog;

  constructor(protected readonly o: BlockAgentOptions) {
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
    // Every Backoff of the agent is made here, with the jitter it was given.
    const backoff = (loop: BackoffLoop): Backoff => new Backoff({ ...o.backoff, random: o.jitter?.(loop) ?? o.backoff?.random, clock: o.backoff?.clock ?? this.clock });
    const pause = o.sleep;
    const wait = (loop: BackoffLoop): Wait => (pause ? (ms, signal) => pause(ms, signal, loop) : sleep);
    // Each loop gets its own literal with every hook (no spread of a shared one): the uplink reads
    // them once per reading, and spread copies of closures made the loads miss their inline caches.
    const token = (): string | null => this.token;
    const unauthorized = (e: BlockClientError): void => this.revoked(e);
    const reachable = (up: boolean, err?: unknown): void => this.setReachable(up, err);
    this.activator = new Activator(this.client, o.tokens, this.log, backoff("activate"), o.userToken, this.clock, wait("activate"));
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
    }, this.log, { ...o.uplink, backoff: backoff("uplink"), wait: wait("uplink"), clock: this.clock });
    this.router = new CommandRouter(this.nodeId, this.client, () => this.token, this.log, (e, ...args) => this.emit(e, ...args), o.camera);
    this.poller = new CommandPoller(this.client, { token, unauthorized, reachable, route: (cmd) => this.router.route(cmd) }, this.log, backoff("poll"), wait("poll"));
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

  /**
   * Stops activating: no new activation request, no more backoff waits; the request in flight may
   * still be answered for up to `ms` (0: abandoned now). A token it brings activates the agent as
   * any other does (`activated`). With `claimed` (a user claimed the block), one more request fetches
   * the token when none in flight brings it. Resolves with what became of the requests (activator.ts).
   */
  finishActivation(ms: number, claimed = false): Promise<ActivationEnd> {
    return this.activator.finish(ms, claimed);
  }

  /** Whether an activation request is waiting for its answer. */
  get activationInFlight(): boolean {
    return this.activator.inFlight;
  }

  /** Registers a link that actuates commands. */
  addLink(target: CommandTarget): void {
    this.router.add(target);
  }

  stats(): AgentStats {
    const ob = this.outbox.stats();
    const outbox = { dropped: ob.dropped, outboxRows: ob.rows, outboxBytes: ob.bytes, outboxFull: ob.full === true };
    const throttled = { uplink: this.uplink.throttled, poll: this.poller.throttled, activate: this.activator.throttled, snapshot: this.router.throttled };
    return { state: this.state, ...this.counters, ...this.router.counters, refused: this.refusals.total, ...outbox, lastServerContact: Number.isNaN(this.lastContact) ? null : this.lastContact, throttled };
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
