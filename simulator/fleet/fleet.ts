/**
 * The fleet: N virtual blocks started at the scenario's ramp-up rate, activated with the user
 * token (direct flow) or, for the first `two_legged` blocks, through the two-legged flow where the
 * simulator claims each waiting block as the user (POST /block). Direct activations and claims are
 * requests with the user token, paced by the run's CredentialPacer. The constructor only assigns;
 * open() (or start()) makes the transport and the blocks, stop() closes them.
 */
import type { BackoffLoop } from "../../gateway/agent/agent.js";
import type { ApiClient } from "../../protocol/api-client.js";
import type { Command } from "../../protocol/payloads.js";
import type { Metrics } from "../metrics/metrics.js";
import { blocksInPart, inPart } from "../part.js";
import { Random } from "../random.js";
import type { FleetPart } from "../report.js";
import { type LoadedScenario, nodeIdFor } from "../scenario/parse.js";
import { type FleetTransport, PIPELINING, SHORT_CONNECTIONS, type ShortCallClient, fleetTransport } from "./transport.js";
import { Scheduler } from "./scheduler.js";
import { FleetSendWindow } from "./send-window.js";
import { CredentialPacer } from "./pacer.js";
import { Claims } from "./claims.js";
import { type SimDevice, VirtualBlock } from "./virtual-block.js";

// The claims' timings are in claims.ts; importers take CLAIM_GIVE_UP_MS from here.
export { CLAIM_GIVE_UP_MS } from "./claims.js";

/** The fleet's readings are fired in batches every this many ms (see Scheduler). */
const SCHEDULER_QUANTUM_MS = 10;

export interface FleetOptions {
  scenario: LoadedScenario;
  baseUrl: string;
  streamUrl?: string;
  /** Several servers (instances of one cluster): block i talks to `targets[i % n]`. Default: baseUrl/streamUrl. */
  targets?: { baseUrl: string; streamUrl?: string }[];
  userToken: string;
  /** Run only this part of the fleet (simulator/part.ts); default all of it. */
  part?: FleetPart | null;
  api: ApiClient;
  metrics: Metrics;
  log(level: "info" | "warn" | "error", text: string): void;
  onCommand(block: VirtualBlock, device: SimDevice, cmd: Command): void;
  clock?: () => number;
  /** The client of the blocks' readings and uploads (`--transport`). Default "http1": the simulator's own. */
  transport?: ShortCallClient;
  /** The user token's requests, paced (shared with the run's other user calls). Default: one of the scenario's rate_limit. */
  pacer?: CredentialPacer;
  /** The claims' waits (between tries, and after a 429). Default: a timer (backoff.ts sleep). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** The blocks' agents' waits after a failure (a seam for tests), with the block's index in the scenario. Default: a timer. */
  blockSleep?: (block: number, ms: number, signal: AbortSignal, loop: BackoffLoop) => Promise<void>;
}

export class Fleet {
  readonly blocks: VirtualBlock[] = [];
  readonly scheduler: Scheduler;
  /** The blocks' transport: opened by open() or start(), closed by stop(). */
  http: FleetTransport | null = null;
  /** Uplink cycles in flight across the fleet: as many as the short-call connections carry (see send-window.ts). */
  readonly window = new FleetSendWindow(SHORT_CONNECTIONS * PIPELINING);
  private readonly rng: Random;
  readonly pacer: CredentialPacer;
  private rampTimer: NodeJS.Timeout | undefined;
  private started = 0;
  private stopped = false;
  /** The two-legged blocks' claims (claims.ts). */
  private readonly claims: Claims;
  private finishing: Promise<void> | null = null;
  /**
   * Blocks whose activation request was still unanswered when the run gave up waiting
   * (finishActivations): the server may claim them after the run, unseen.
   */
  readonly inFlightAtStop: string[] = [];
  activated = 0;
  activationFailed = 0;
  /** Resolves once every block was started (not necessarily activated). */
  rampDone: Promise<void> = Promise.resolve();

  constructor(private readonly o: FleetOptions) {
    this.scheduler = new Scheduler(o.clock ?? Date.now, SCHEDULER_QUANTUM_MS);
    this.rng = new Random(o.scenario.seed);
    this.pacer = o.pacer ?? new CredentialPacer(o.scenario.rate_limit.requests_per_s, o.clock);
    this.claims = new Claims(o, this.rng, this.pacer, () => this.activationFailed++);
  }

  /** Blocks this fleet runs (its part of the scenario), before and after they are built. */
  get planned(): number {
    return blocksInPart(this.o.scenario.blocks.count, this.o.part);
  }

  /**
   * Opens the blocks' transport and builds the blocks, without a call yet (the callback planner
   * reads their devices before the ramp). start() does it when it was not done.
   */
  open(): void {
    if (this.http) return;
    const o = this.o;
    const http = fleetTransport(SHORT_CONNECTIONS, PIPELINING, o.transport);
    this.http = http;
    const s = o.scenario;
    const targets = o.targets && o.targets.length > 0 ? o.targets : [{ baseUrl: o.baseUrl, streamUrl: o.streamUrl }];
    const blockSleep = o.blockSleep;
    for (let i = 0; i < s.blocks.count; i++) {
      if (!inPart(o.part, i)) continue;
      const nodeId = nodeIdFor(s.blocks.node_id, s.seed, i);
      const twoLegged = i < s.blocks.two_legged;
      const target = targets[i % targets.length] as { baseUrl: string; streamUrl?: string };
      this.blocks.push(
        new VirtualBlock(i, nodeId, s.devices, this.rng, {
          baseUrl: target.baseUrl,
          streamUrl: target.streamUrl,
          transport: http.transport,
          window: this.window,
          scheduler: this.scheduler,
          metrics: o.metrics,
          userToken: twoLegged ? undefined : o.userToken,
          onCommand: o.onCommand,
          onActivated: () => {
            this.activated++;
          },
          log: o.log,
          clock: o.clock,
          sleep: blockSleep ? (ms, signal, loop) => blockSleep(i, ms, signal, loop) : undefined,
        }),
      );
    }
  }

  get running(): number {
    return this.started;
  }

  /**
   * Starts the blocks at `ramp_up.blocks_per_s`, never more than `max_pending` of them waiting for
   * activation (the ramp follows the server's activation rate), and a block of the direct flow only
   * when the user token has room under the server's limit (its activation request is one with that
   * credential); returns at once (see rampDone).
   */
  start(): void {
    this.open();
    const { blocks_per_s, max_pending } = this.o.scenario.ramp_up;
    const perTick = Math.max(1, Math.round(blocks_per_s / 10));
    this.rampDone = new Promise<void>((resolve) => {
      const step = (): void => {
        if (this.stopped) return resolve();
        const room = Math.max(0, max_pending - (this.started - this.activated - this.activationFailed));
        const end = Math.min(this.blocks.length, this.started + Math.min(perTick, room));
        while (this.started < end) {
          const b = this.blocks[this.started] as VirtualBlock;
          if (b.index >= this.o.scenario.blocks.two_legged && !this.pacer.tryTake()) break;
          this.started++;
          this.startBlock(b);
        }
        if (this.started >= this.blocks.length) {
          this.rampTimer = undefined;
          resolve();
        } else this.rampTimer = setTimeout(step, 100);
      };
      step();
    });
  }

  private startBlock(b: VirtualBlock): void {
    b.start().catch((err: unknown) => {
      this.activationFailed++;
      this.o.log("error", `${b.nodeId}: start failed: ${(err as Error).message}`);
    });
    if (b.index < this.o.scenario.blocks.two_legged) this.claims.start(b);
  }

  /** Per-second rates of every block (called once a second). */
  tick(): void {
    for (const b of this.blocks) b.rate.sample(b.sent);
  }

  /** Blocks picked with the seeded random source (for chaos steps). */
  pick(n: number, rng: Random): VirtualBlock[] {
    const live = this.blocks.filter((b) => b.activated && b.state !== "paused" && b.state !== "dropped");
    const out: VirtualBlock[] = [];
    while (out.length < n && live.length > 0) out.push(live.splice(rng.int(live.length), 1)[0] as VirtualBlock);
    return out;
  }

  backlog(): number {
    let n = 0;
    for (const b of this.blocks) n += b.backlog;
    return n;
  }

  async pauseAll(): Promise<void> {
    await Promise.all(this.blocks.slice(0, this.started).map((b) => b.pause()));
  }

  async resumeAll(): Promise<void> {
    await Promise.all(this.blocks.slice(0, this.started).map((b) => b.resume()));
  }

  /** Stops generating readings but keeps the agents running so their outboxes drain. */
  quiesce(): void {
    this.stopped = true;
    this.claims.stop();
    this.pacer.stop();
    if (this.rampTimer) clearTimeout(this.rampTimer);
    this.scheduler.stop();
    for (const b of this.blocks) b.restore();
  }

  /**
   * The run ends (quiesce() first): no block asks for activation again, and the requests in flight
   * may still be answered for up to `ms`. The server carries out a request it received whether or
   * not the block waits for the answer: abandoned, a direct activation would claim a block that the
   * run neither counts nor is sure to find in its cleanup (the unpair could reach the server first).
   * A two-legged block's held request is waited for only once the simulator claimed the block (it is
   * then answered at once); unclaimed, it is abandoned (nothing to carry out). A claimed block with no
   * request bringing its token (between two held requests: the last ended unclaimed before the claim,
   * or it waits after a failed one) sends one more, within the same `ms`. Those still unanswered
   * after `ms` are abandoned and listed in inFlightAtStop. Once; later calls wait for the first.
   */
  finishActivations(ms: number): Promise<void> {
    this.finishing ??= this.finishAll(ms);
    return this.finishing;
  }

  private async finishAll(ms: number): Promise<void> {
    const clock = this.o.clock ?? Date.now;
    const deadline = clock() + ms;
    const waiting = this.blocks.slice(0, this.started).filter((b) => !b.activated);
    // The simulator's own claims in flight come first: a claim made turns a held request into an answer.
    if (this.claims.pending.size > 0) await settledWithin([...this.claims.pending], ms);
    const answered = (b: VirtualBlock): boolean => b.index >= this.o.scenario.blocks.two_legged || this.claims.claimed.has(b);
    // A claimed block between two held requests (the last one ended before the claim) sends one more.
    const inFlight = waiting.filter((b) => (b.agent.activationInFlight && answered(b)) || this.claims.claimed.has(b)).length;
    const left = Math.max(0, deadline - clock());
    if (inFlight > 0) this.o.log("info", `stopping: ${inFlight} activation request${inFlight === 1 ? "" : "s"} in flight, waiting up to ${Math.ceil(left / 100) / 10} s for the server's answer`);
    await Promise.all(
      waiting.map(async (b) => {
        const wait = answered(b);
        const end = await b.finishActivation(wait ? left : 0, this.claims.claimed.has(b));
        if (end === "abandoned" && wait) this.inFlightAtStop.push(b.nodeId);
      }),
    );
    if (this.inFlightAtStop.length > 0) {
      this.o.log("warn", `${this.inFlightAtStop.length} activation request${this.inFlightAtStop.length === 1 ? " was" : "s were"} still unanswered after ${Math.ceil(ms / 100) / 10} s: the server may claim ${this.inFlightAtStop.length === 1 ? "that block" : "those blocks"} after the run`);
    }
  }

  async stop(): Promise<void> {
    this.quiesce();
    await Promise.allSettled([...this.claims.pending]);
    await Promise.all(this.blocks.slice(0, this.started).map((b) => b.stop()));
    await this.http?.close().catch(() => undefined);
  }
}

/** Resolves once every promise settled, or after `ms`, whichever comes first. */
async function settledWithin(promises: Promise<unknown>[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const out = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  await Promise.race([Promise.allSettled(promises), out]);
  clearTimeout(timer);
}
