/**
 * The simulator's own load: CPU (process.cpuUsage) and event-loop delay
 * (perf_hooks.monitorEventLoopDelay). When either is high the simulator, not the server, limits
 * the run, and the report says so.
 */
import { type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks";

export interface LoadSummary {
  /** CPU of this process over the run, percent of one core. */
  cpu_percent: number;
  cpu_percent_max: number;
  cpu_user_ms: number;
  cpu_system_ms: number;
  loop_delay_p50_ms: number;
  loop_delay_p99_ms: number;
  loop_delay_max_ms: number;
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

  constructor(private readonly clock: () => number = () => performance.now()) {}

  start(): void {
    this.loop = monitorEventLoopDelay({ resolution: 10 });
    this.loop.enable();
    this.startCpu = this.lastCpu = process.cpuUsage();
    this.startAt = this.lastAt = this.clock();
  }

  /** Starts the measured window: the summary covers only what follows (not ramp-up or warm-up). */
  mark(): void {
    this.startCpu = process.cpuUsage();
    this.startAt = this.clock();
    this.maxPercent = 0;
    this.loop?.reset();
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
    };
  }

  stop(): void {
    this.loop?.disable();
  }
}
