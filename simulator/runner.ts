/**
 * The simulator's controller: owns the fleet, the command driver, chaos, the callback receiver and
 * the measurements, and walks the run through its phases (ramping -> warm-up -> running ->
 * draining -> done). `start()` returns once everything listens; `finished` resolves with the report.
 */
import { Agent } from "undici";
import { ApiClient } from "../protocol/api-client.js";
import { CallbackReceiver } from "./callback-receiver.js";
import { CleanupProgress, type CleanupResult, cleanupFleet } from "./cleanup.js";
import { EventLog, type LogEntry } from "./event-log.js";
import { CallbackRegistrar } from "./fleet/callbacks.js";
import { Chaos } from "./fleet/chaos.js";
import { CommandDriver } from "./fleet/commands.js";
import { Fleet } from "./fleet/fleet.js";
import { MeasuredTime } from "./measured-time.js";
import { SelfLoad } from "./metrics/load.js";
import { Metrics } from "./metrics/metrics.js";
import { Random } from "./random.js";
import { CALLBACK_DRAIN_MS, type RunPhase, type SimOptions, warnOverLimit } from "./runner-options.js";
import { type Report, buildReport } from "./report.js";
import { scenarioPart } from "./part.js";
import { type RunStatus, runnerStatus } from "./status.js";
import type { LoadedScenario } from "./scenario/parse.js";

// What a run is given and its phases are in runner-options.ts; importers take them from here.
export type { RunPhase, SimOptions } from "./runner-options.js";
export { CALLBACK_DRAIN_MS } from "./runner-options.js";

export class SimRunner {
  readonly metrics = new Metrics();
  readonly load = new SelfLoad();
  readonly log = new EventLog();
  readonly fleet: Fleet;
  readonly commands: CommandDriver;
  readonly chaos: Chaos;
  readonly receiver: CallbackReceiver;
  readonly callbacks: CallbackRegistrar;
  private readonly api: ApiClient;
  private readonly apiDispatcher = new Agent({ connections: 32, keepAliveTimeout: 30_000 });
  private readonly clock: () => number;
  phase: RunPhase = "starting";
  paused = false;
  startedAt = 0;
  /** The measured window: opened after the warm-up, pauses left out, fixed at the drain. */
  private readonly measure: MeasuredTime;
  private ticker: NodeJS.Timeout | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  private chaosCount = 0;
  private endRequested: (() => void) | null = null;
  /** A stop asked for before run() could take it (during start()) still ends the run. */
  private stopRequested = false;
  readonly finished: Promise<Report>;
  private resolveFinished!: (r: Report) => void;
  private rejectFinished!: (e: unknown) => void;

  /** The scenario as this process runs it (its part's share of the fleet-wide rates). */
  private readonly s: LoadedScenario;

  constructor(private readonly o: SimOptions) {
    this.s = scenarioPart(o.scenario, o.part);
    if (!o.token) throw new TypeError("SimRunner: a user access token is required");
    this.clock = o.clock ?? Date.now;
    this.measure = new MeasuredTime(this.metrics, this.clock);
    const log = (level: "info" | "warn" | "error", text: string): void => this.log.add(level, text);
    this.api = new ApiClient({ baseUrl: o.baseUrl, streamUrl: o.streamUrl, token: o.token, dispatcher: this.apiDispatcher, timeoutMs: 15_000 });
    this.fleet = new Fleet({
      scenario: this.s,
      part: o.part,
      baseUrl: o.baseUrl,
      streamUrl: o.streamUrl,
      targets: o.targets,
      userToken: o.token,
      api: this.api,
      metrics: this.metrics,
      log,
      onCommand: (b, d, cmd) => this.commands.arrived(b, d, cmd),
      clock: o.clock,
      transport: o.transport,
    });
    const rng = new Random(this.s.seed);
    this.commands = new CommandDriver(this.fleet, this.api, this.metrics, this.s.commands.rate, rng.child(o.part ? `commands/${o.part.index}` : "commands"), log, this.clock);
    this.chaos = new Chaos(this.fleet, this.s.seed, log);
    this.receiver = new CallbackReceiver(this.metrics, { host: o.callbackHost, port: o.callbackPort, publicHost: o.callbackPublicHost, clock: this.clock });
    this.callbacks = new CallbackRegistrar(this.fleet, this.api, this.receiver, this.metrics, this.s.callbacks.devices, log, this.clock);
    this.finished = new Promise<Report>((resolve, reject) => {
      this.resolveFinished = resolve;
      this.rejectFinished = reject;
    });
  }

  /** The run now, for the progress lines and the TUI. */
  status(): RunStatus {
    return runnerStatus(this);
  }

  onLog(listener: (e: LogEntry) => void): void {
    this.log.onEntry(listener);
  }

  get scenario(): LoadedScenario {
    return this.s;
  }

  async start(): Promise<void> {
    this.startedAt = this.clock();
    warnOverLimit(this.s, this.log);
    this.load.start();
    await this.receiver.start();
    this.fleet.open();
    this.callbacks.plan();
    this.phase = "ramping";
    this.metrics.recording = this.s.warmup_s === 0;
    this.fleet.start();
    this.ticker = setInterval(() => this.tick(), 1000);
    this.commands.start();
    this.run().then(this.resolveFinished, this.rejectFinished);
  }

  private async run(): Promise<Report> {
    const s = this.s;
    const ended = new Promise<void>((resolve) => {
      this.endRequested = resolve;
    });
    if (this.stopRequested) this.endRequested?.();
    // A ramp held up by activations that do not come (server unreachable, token refused) must not
    // hold the run forever: measure with the blocks that made it.
    // The ramp's pace: blocks_per_s, or the user token's limit when that is lower (direct activations).
    const limit = s.rate_limit.requests_per_s;
    const pace = limit > 0 && s.blocks.two_legged < s.blocks.count ? Math.min(s.ramp_up.blocks_per_s, limit) : s.ramp_up.blocks_per_s;
    const rampLimitMs = Math.max(30_000, (3000 * s.blocks.count) / pace);
    await Promise.race([this.fleet.rampDone, ended, this.wait(rampLimitMs)]);
    if (this.fleet.running < this.fleet.planned && this.phase === "ramping" && !this.stopRequested) {
      this.log.add("warn", `ramp-up incomplete after ${rampLimitMs / 1000} s: ${this.fleet.running} of ${this.fleet.planned} blocks started, ${this.fleet.activated} activated`);
    }
    // A stop asked for during the ramp (a Ctrl-C at start-up) goes straight to the drain: no
    // warm-up, no measured window opened and no chaos started for an instant.
    if (this.phase === "ramping" && s.warmup_s > 0 && !this.stopRequested) {
      this.phase = "warmup";
      await Promise.race([this.wait(s.warmup_s * 1000), ended]);
      this.metrics.resetLatencies();
      this.metrics.recording = true;
    }
    if ((this.phase === "ramping" || this.phase === "warmup") && !this.stopRequested) {
      this.phase = "running";
      this.measure.open();
      this.load.mark();
      this.fleet.window.resetStats();
      this.chaos.start(s.chaos);
      await Promise.race([this.untilMeasured(s.duration_s * 1000), ended]);
    }
    return this.drain();
  }

  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
  }

  /** Resolves once the measured time (pauses excluded) reaches `ms`. */
  private async untilMeasured(ms: number): Promise<void> {
    while (this.measuredMs() < ms && this.phase === "running") await this.wait(Math.max(10, Math.min(1000, ms - this.measuredMs())));
  }

  measuredMs(): number {
    return this.measure.measuredMs();
  }

  /** Events acknowledged per second over the measured window (MeasuredTime.ackRate: the one definition). */
  ackRate(): number {
    return this.measure.ackRate(this.startedAt);
  }

  remainingMs(): number {
    return Math.max(0, this.s.duration_s * 1000 - this.measuredMs());
  }

  /** Quit: end the run now and report what was measured. */
  requestStop(): void {
    this.stopRequested = true;
    this.endRequested?.();
  }

  async pause(): Promise<void> {
    if (this.paused || this.phase === "draining" || this.phase === "done") return;
    this.paused = true;
    const at = this.clock();
    this.measure.pause(at);
    this.metrics.paused(at);
    this.commands.paused = true;
    this.log.add("info", "run paused");
    await this.fleet.pauseAll();
  }

  async resume(): Promise<void> {
    if (!this.paused) return;
    this.paused = false;
    this.measure.resume();
    this.metrics.resumed(this.clock());
    this.commands.paused = false;
    this.log.add("info", "run resumed");
    await this.fleet.resumeAll();
  }

  injectChaos(): void {
    this.chaos.inject(this.chaosCount++);
  }

  private tick(): void {
    this.metrics.tick();
    this.load.sample();
    this.fleet.tick();
    this.callbacks.tick().catch((err: unknown) => this.log.add("error", `callbacks: ${(err as Error).message}`));
  }

  private async drain(): Promise<Report> {
    this.phase = "draining";
    if (this.paused) await this.resume();
    const measuredMs = this.measuredMs();
    // The simulator's load and the acknowledged rate cover the measured window, not the drain.
    const load = this.load.summary();
    const measuredAcked = this.measure.fix(measuredMs);
    this.chaos.stop();
    this.commands.stop();
    this.fleet.quiesce();
    const deadline = this.clock() + (this.o.drainTimeoutMs ?? 15_000);
    // Activations in flight are answered before the report counts them (and before the cleanup).
    await this.fleet.finishActivations(this.o.drainTimeoutMs ?? 15_000);
    await this.commands.drain(deadline - this.clock());
    while (this.clock() < deadline && (this.fleet.backlog() > 0 || this.commands.inFlight > 0)) await this.wait(100);
    if (this.callbacks.registered.length > 0) await this.wait(CALLBACK_DRAIN_MS);
    const backlog = this.fleet.backlog();
    if (backlog > 0) this.log.add("warn", `${backlog} readings were still unacknowledged when the drain time ran out`);
    for (const p of this.commands.pendingList()) this.log.add("warn", `command ${p.da} to ${p.guid} still in flight after ${Math.round(p.ageMs)} ms`);
    const report = buildReport({
      scenario: this.o.scenario,
      part: this.o.part ?? null,
      histograms: { ingest: this.metrics.ingest.encode(), command: this.metrics.command.encode(), callback: this.metrics.callback.encode() },
      startedAt: this.startedAt,
      measuredMs,
      blocks: { planned: this.fleet.planned, activated: this.fleet.activated, failed: this.fleet.planned - this.fleet.activated, in_flight_at_stop: this.fleet.inFlightAtStop.length },
      metrics: this.metrics.snapshot(),
      load,
      measuredAcked,
      callbackDevices: this.callbacks.registered.length,
      commandsInFlight: this.commands.inFlight,
      commandsAbandoned: this.commands.abandonedAtStop,
      window: this.fleet.window.summary(),
    });
    this.phase = "done";
    return report;
  }

  /** What the cleanup at stop() did (with the scenario's `cleanup`), null before or without it. */
  cleanupResult: CleanupResult | null = null;
  /** The cleanup at stop() once it began (with the scenario's `cleanup`): what it has done and not, so far. */
  cleanupProgress: CleanupProgress | null = null;

  /** Stops everything (after `finished`, or to abandon a run); then cleans up with the scenario's `cleanup`. */
  async stop(): Promise<void> {
    this.requestStop();
    if (this.ticker) clearInterval(this.ticker);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.commands.stop();
    this.chaos.stop();
    // A run abandoned without its drain: what was asked is still answered first (see drain()).
    this.fleet.quiesce();
    await Promise.all([this.fleet.finishActivations(this.o.drainTimeoutMs ?? 15_000), this.commands.drain(this.o.drainTimeoutMs ?? 15_000)]);
    await this.fleet.stop();
    await this.receiver.stop();
    this.load.stop();
    if (this.s.cleanup && this.cleanupResult === null) {
      const nodeIds = this.fleet.blocks.slice(0, this.fleet.running).map((b) => b.nodeId);
      this.cleanupProgress = new CleanupProgress(nodeIds, this.callbacks.registered);
      this.cleanupResult = await cleanupFleet(this.api, {
        nodeIds,
        callbackGuids: this.callbacks.registered,
        progress: this.cleanupProgress,
        inFlight: this.fleet.inFlightAtStop,
        pacer: this.fleet.pacer,
        timeoutMs: this.s.cleanup_timeout_s * 1000,
      });
      this.fleet.pacer.stop();
    }
    await this.apiDispatcher.close().catch(() => undefined);
  }
}
