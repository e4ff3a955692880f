/**
 * The simulator's own load: CPU (process.cpuUsage) and event-loop delay
 * (perf_hooks.monitorEventLoopDelay). When either is high the simulator, not the server, limits
 * the run, and the report says so.
 *
 * And how long an answer that has arrived waits for the simulator's event loop: a worker thread
 * echoes a message every 25 ms at once, so the time until the event loop reads the echo is the
 * time any answer waiting in a socket would wait. Against an exchange's whole time it separates
 * the simulator's share from the server's (the report's verdict): the loop-delay percentiles
 * cannot, as long stalls that hold every answer weigh far more than their share of timer ticks.
 */
import { type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks";
import { Worker } from "node:worker_threads";

const ECHO_MS = 25;
const ECHO = "require('node:worker_threads').parentPort.on('message', (m) => require('node:worker_threads').parentPort.postMessage(m));";

export interface LoadSummary {
  /** CPU of this process over the run, percent of one core. */
  cpu_percent: number;
  cpu_percent_max: number;
  cpu_user_ms: number;
  cpu_system_ms: number;
  loop_delay_p50_ms: number;
  loop_delay_p99_ms: number;
  loop_delay_max_ms: number;
  /** Mean time an arrived answer waited for the event loop (echo from a worker thread), ms; null without samples. */
  answer_wait_ms: number | null;
  answer_wait_max_ms: number | null;
}

export class SelfLoad {
  private loop: IntervalHistogram | null = null;
  private startCpu: NodeJS.CpuUsage = process.cpuUsage();
  private startAt = 0;
  private lastCpu: NodeJS.CpuUsage = process.cpuUsage();
  private lastAt = 0;
  private maxPercent = 0;
  /** CPU percent of the last sample. */
  current = 0;
  private echo: Worker | null = null;
  private echoTimer: NodeJS.Timeout | undefined;
  private waits = { n: 0, sum: 0, max: 0 };

  constructor(private readonly clock: () => number = () => performance.now()) {}

  start(): void {
    this.loop = monitorEventLoopDelay({ resolution: 10 });
    this.loop.enable();
    this.startEcho();
    this.startCpu = this.lastCpu = process.cpuUsage();
    this.startAt = this.lastAt = this.clock();
  }

  /** Starts the measured window: the summary covers only what follows (not ramp-up or warm-up). */
  mark(): void {
    this.startCpu = process.cpuUsage();
    this.startAt = this.clock();
    this.maxPercent = 0;
    this.loop?.reset();
    this.waits = { n: 0, sum: 0, max: 0 };
  }

  /** Takes a CPU sample (call about once a second); returns the percent since the last one. */
  sample(): number {
    const cpu = process.cpuUsage();
    const now = this.clock();
    const used = cpu.user - this.lastCpu.user + (cpu.system - this.lastCpu.system);
    const elapsed = (now - this.lastAt) * 1000;
    this.lastCpu = cpu;
    this.lastAt = now;
    this.current = elapsed > 0 ? (100 * used) / elapsed : 0;
    this.maxPercent = Math.max(this.maxPercent, this.current);
    return this.current;
  }

  loopDelayP99Ms(): number {
    return this.loop ? this.loop.percentile(99) / 1e6 : 0;
  }

  summary(): LoadSummary {
    const cpu = process.cpuUsage(this.startCpu);
    const elapsed = (this.clock() - this.startAt) * 1000;
    const l = this.loop;
    const ms = (ns: number): number => Math.round(ns / 1e3) / 1e3;
    return {
      cpu_percent: elapsed > 0 ? Math.round((1000 * (cpu.user + cpu.system)) / elapsed) / 10 : 0,
      cpu_percent_max: Math.round(this.maxPercent * 10) / 10,
      cpu_user_ms: Math.round(cpu.user / 1000),
      cpu_system_ms: Math.round(cpu.system / 1000),
      loop_delay_p50_ms: l && l.count > 0 ? ms(l.percentile(50)) : 0,
      loop_delay_p99_ms: l && l.count > 0 ? ms(l.percentile(99)) : 0,
      loop_delay_max_ms: l && l.count > 0 ? ms(l.max) : 0,
      answer_wait_ms: this.waits.n > 0 ? Math.round((1000 * this.waits.sum) / this.waits.n) / 1000 : null,
      answer_wait_max_ms: this.waits.n > 0 ? Math.round(1000 * this.waits.max) / 1000 : null,
    };
  }

  stop(): void {
    this.loop?.disable();
    if (this.echoTimer) clearInterval(this.echoTimer);
    this.echoTimer = undefined;
    void this.echo?.terminate();
    this.echo = null;
  }

  private startEcho(): void {
    if (this.echo) return;
    const echo = new Worker(ECHO, { eval: true });
    echo.unref();
    echo.on("message", (sent: number) => {
      const waited = performance.now() - sent;
      this.waits.n++;
      this.waits.sum += waited;
      if (waited > this.waits.max) this.waits.max = waited;
    });
    // Without the echo the verdict falls back to the loop delay: not worth failing a run over.
    echo.on("error", () => undefined);
    this.echo = echo;
    this.echoTimer = setInterval(() => this.ping(), ECHO_MS);
    this.echoTimer.unref();
  }

  /** Sends one echo now (the timer sends one every 25 ms). */
  ping(): void {
    this.echo?.postMessage(performance.now());
  }
}
