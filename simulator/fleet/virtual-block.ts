/**
 * One simulated block: a real BlockAgent (gateway/agent) whose hardware link is virtual. Sensors
 * submit generated readings to the agent as a serial or MQTT link would; actuators are a
 * CommandTarget that applies each command and reports the new value back as data, like hardware.
 * Its devices and their fields are made in devices.ts, its readings rate kept in block-rate.ts.
 */
import pino from "pino";
import type { BlockTransport } from "../../protocol/transport.js";
import { type ActivationEnd, BlockAgent, type BlockAgentOptions, type CommandTarget, type Reading, type SendWindow } from "../../gateway/agent/index.js";
import type { Command } from "../../protocol/payloads.js";
import { cameraFrame } from "../jpeg.js";
import type { Metrics } from "../metrics/metrics.js";
import { blockJitter, type Random } from "../random.js";
import type { ResolvedDevice } from "../scenario/parse.js";
import { BlockRate } from "./block-rate.js";
import { SimBlockClient } from "./client.js";
import { makeDevices, type SimDevice } from "./devices.js";
import { MeasuredOutbox, SimTokenStore } from "./memory.js";
import type { Scheduler } from "./scheduler.js";

export type { SimDevice };

/** The blocks' agents' backoff (their activation, uplink and commands poll): 0.5 s doubling to 10 s. */
export const BLOCK_BACKOFF = { baseMs: 500, maxMs: 10_000, resetAfterMs: 10_000 } as const;

/**
 * Every block's agent logs here: silent (the simulator reports through its metrics and event log).
 * One for the fleet: a logger of its own per agent (the agent's default) was a pino instance and its
 * stdout stream per block, about a tenth of a block's heap.
 */
const AGENT_LOG = pino({ level: "silent" });

export type BlockState = "waiting" | "activating" | "online" | "offline" | "paused" | "dropped" | "stopped";

export interface BlockContext {
  baseUrl: string;
  streamUrl?: string;
  /** The fleet's shared transport (simulator/fleet/transport.ts). */
  transport: BlockTransport;
  /** The fleet's send window (uplink cycles in flight across all blocks). */
  window?: SendWindow;
  scheduler: Scheduler;
  metrics: Metrics;
  /** User token for the direct activation flow; undefined for a two-legged block. */
  userToken?: string;
  /** A command reached a virtual device (for round-trip timing). */
  onCommand(block: VirtualBlock, device: SimDevice, cmd: Command): void;
  onActivated(block: VirtualBlock): void;
  log(level: "info" | "warn" | "error", text: string): void;
  clock?: () => number;
  /** The agent's waits after a failure (a seam for tests). Default: a timer. */
  sleep?: BlockAgentOptions["sleep"];
}

export class VirtualBlock implements CommandTarget {
  readonly name = "sim";
  readonly devices: Map<string, SimDevice>;
  readonly agent: BlockAgent;
  private readonly client: SimBlockClient;
  private readonly outbox: MeasuredOutbox;
  private running = false;
  private paused = false;
  /** The run is ending (finishActivation()): an activation is still counted, but no reading follows it. */
  private finishing = false;
  activated = false;
  activatedAt: number | null = null;
  sent = 0;
  acked = 0;
  errors = 0;
  /** Whether the server acknowledged the block's PLUGIN announcements (its devices exist there). */
  announced = false;
  /** Readings per second, averaged over the last seconds (see BlockRate). */
  readonly rate = new BlockRate();
  private frames = 0;
  private snapshotFailures = 0;

  constructor(
    readonly index: number,
    readonly nodeId: string,
    specs: ResolvedDevice[],
    rng: Random,
    private readonly ctx: BlockContext,
  ) {
    const clock = ctx.clock ?? Date.now;
    const { devices, cameraSize } = makeDevices(nodeId, specs, rng);
    this.devices = devices;
    this.outbox = new MeasuredOutbox((entries, now) => {
      for (const e of entries) {
        // A PLUGIN announcement is not a reading: it is neither counted nor timed.
        if (e.kind === "config") this.announced = true;
        else {
          this.acked++;
          ctx.metrics.ackedAt(e.ts, now);
        }
      }
    });
    this.client = new SimBlockClient(
      { baseUrl: ctx.baseUrl, streamUrl: ctx.streamUrl, nodeId, transport: ctx.transport },
      { error: (kind) => this.error(kind), throttled: (kind) => ctx.metrics.throttled(kind) },
    );
    this.agent = new BlockAgent({
      nodeId,
      logger: AGENT_LOG,
      client: this.client,
      outbox: this.outbox,
      tokens: new SimTokenStore(),
      userToken: ctx.userToken,
      clock,
      backoff: BLOCK_BACKOFF,
      // The seed's jitter: a stream per block and loop.
      jitter: blockJitter(rng, nodeId),
      sleep: ctx.sleep,
      uplink: ctx.window ? { window: ctx.window } : undefined,
      // A reading the uplink would send alone at once is sent without an outbox entry, and its
      // acknowledgement only counted and timed here (the outbox's listener above times the others).
      lean: {
        acked: (ts) => {
          this.acked++;
          ctx.metrics.ackedAt(ts, clock());
        },
      },
      camera: cameraSize
        ? { take: () => Promise.resolve(cameraFrame(cameraSize.width, cameraSize.height, this.frames++)) }
        : undefined,
    });
    this.agent.addLink(this);
    this.agent.on("activated", () => {
      if (!this.activated) {
        this.activated = true;
        this.activatedAt = clock();
        if (!this.finishing) this.reportInitial();
        ctx.onActivated(this);
      }
      // Readings start with the token, so ingest latency measures the server, not activation.
      if (this.running && !this.paused && !this.finishing) this.schedule();
    });
    this.agent.on("rejected", (_entry: unknown, message: string) => {
      this.error("uplink_rejected");
      ctx.log("error", `${nodeId}: reading refused: ${message}`);
    });
    this.agent.on("dropped", (n: number) => {
      for (let i = 0; i < n; i++) this.error("outbox_dropped");
    });
    this.agent.on("snapshot", () => {
      ctx.metrics.counters.snapshots_sent++;
    });
  }

  get state(): BlockState {
    if (this.paused) return "paused";
    if (this.client.dropped) return "dropped";
    if (!this.running) return this.activated ? "stopped" : "waiting";
    const s = this.agent.currentState;
    return s === "idle" ? "waiting" : s === "stopped" ? "stopped" : s;
  }

  get backlog(): number {
    return this.outbox.rows;
  }

  /** Starts the agent; once activated, the actuators report their state and the generators run. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.agent.start();
  }

  /**
   * Every device announces itself (a PLUGIN config event), as firmware does when a module is plugged
   * in: the fleet's devices exist on the server from the start, not after their first reading (a
   * button may not be pressed for minutes), and a camera is known before a snapshot request.
   */
  private reportInitial(): void {
    const plugins: Reading[] = [];
    for (const d of this.devices.values()) plugins.push({ G: d.G, V: d.V, D: d.D, DA: "PLUGIN", kind: "config" });
    this.agent.submitMany(plugins);
    const initial: Reading[] = [];
    for (const d of this.devices.values()) {
      const v = d.gen.initial();
      if (v !== null && d.last === null) {
        d.last = v;
        initial.push({ G: d.G, V: d.V, D: d.D, DA: v, kind: "data" });
      }
    }
    if (initial.length > 0) this.submit(initial);
  }

  /**
   * The run ends: no more activation requests, but the one in flight may be answered for up to `ms`
   * (the server carries it out either way, so the run counts it and its cleanup finds the block).
   */
  finishActivation(ms: number, claimed = false): Promise<ActivationEnd> {
    this.finishing = true;
    return this.agent.finishActivation(ms, claimed);
  }

  async stop(): Promise<void> {
    this.running = false;
    this.unschedule();
    await this.agent.stop();
  }

  /** Chaos: the block freezes (no readings, no polls) until resume(). */
  async pause(): Promise<void> {
    if (this.paused || !this.running) return;
    this.paused = true;
    const now = this.ctx.scheduler.now();
    for (const d of this.devices.values()) if (d.job !== null) d.held = Math.max(0, d.job.due - now);
    this.unschedule();
    await this.agent.stop();
  }

  async resume(): Promise<void> {
    if (!this.paused) return;
    this.paused = false;
    if (!this.running) return;
    // The agent loads its stored token and emits `activated`, which restarts the generators.
    await this.agent.start();
  }

  /** Chaos: the block's network goes away; readings keep piling up in its outbox. */
  drop(): void {
    this.client.drop();
  }

  restore(): void {
    this.client.restore();
  }

  /** Chaos: `n` readings at once from the first sensor. */
  burst(n: number): void {
    const d = [...this.devices.values()].find((x) => x.kind === "sensor") ?? [...this.devices.values()][0];
    if (!d) return;
    const readings: Reading[] = [];
    for (let i = 0; i < n; i++) readings.push({ G: d.G, V: d.V, D: d.D, DA: d.gen.nextValue(), kind: "heartbeat" });
    d.last = readings[readings.length - 1]?.DA ?? d.last;
    this.submit(readings);
  }

  owns(cmd: Command): boolean {
    return this.devices.has(`${cmd.G}_${cmd.V}_${cmd.D}`);
  }

  /** The virtual hardware applies the command and reports the new value back, as real actuators do. */
  deliver(cmd: Command): Promise<void> {
    const d = this.devices.get(`${cmd.G}_${cmd.V}_${cmd.D}`);
    if (!d) return Promise.reject(new Error(`no device ${cmd.G}_${cmd.V}_${cmd.D} on ${this.nodeId}`));
    this.ctx.onCommand(this, d, cmd);
    if (d.kind === "actuator") {
      d.last = cmd.DA;
      this.submit([{ G: d.G, V: d.V, D: d.D, DA: cmd.DA, kind: "data" }]);
    }
    return Promise.resolve();
  }

  private submit(readings: Reading[]): void {
    // No link name: this block is the agent's only link and owns every device it reports, so
    // commands find it without the agent recording an owner per reading.
    const n = this.agent.submitMany(readings);
    this.sent += n;
    this.ctx.metrics.sent(n);
  }

  private error(kind: string): void {
    this.errors++;
    this.ctx.metrics.error(kind);
    if (kind.startsWith("snapshot") && this.snapshotFailures++ === 0) {
      const where = this.ctx.streamUrl ? `to ${this.ctx.streamUrl}` : "without a stream URL";
      this.ctx.log("error", `${this.nodeId}: camera snapshot upload ${where} failed (${kind}); give the server's stream_url with --stream`);
    }
  }

  private schedule(): void {
    for (const d of this.devices.values()) if (d.job === null) this.next(d);
  }

  private next(d: SimDevice): void {
    const delay = d.held ?? d.gen.nextDelay();
    d.held = null;
    if (delay === null) return;
    d.fire ??= () => this.fire(d);
    d.job = this.ctx.scheduler.after(delay, d.fire, d.spare);
    d.spare = d.job;
  }

  private fire(d: SimDevice): void {
    d.job = null;
    if (!this.running || this.paused) return;
    const v = d.gen.nextValue();
    d.last = v;
    // The steady state's reading: straight into this tick's requests when the uplink is idle.
    if (this.agent.submitLean({ G: d.G, V: d.V, D: d.D, DA: v, kind: d.event })) {
      this.sent++;
      this.ctx.metrics.sent(1);
    }
    this.next(d);
  }

  private unschedule(): void {
    for (const d of this.devices.values()) {
      d.job?.cancel();
      d.job = null;
    }
  }
}
