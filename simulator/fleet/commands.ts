/**
 * The command driver: PUTs commands as the user to random virtual actuators at the scenario's rate
 * and times each from the PUT until the virtual device receives it (command round trip). One command
 * at a time per device, so a late arrival cannot be matched to the wrong command; one that has not
 * arrived after `lostAfterMs` counts as lost. A PUT answered 429 holds every command back until the
 * server's Retry-After has passed (bounded as the agent's loops bound it). At the stop, the PUTs
 * still unanswered are waited for up to what is left of the drain, then abandoned and counted.
 */
import { retryAfterOf } from "../../gateway/agent/backoff.js";
import type { ApiClient } from "../../protocol/api-client.js";
import type { Command } from "../../protocol/payloads.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Random } from "../random.js";
import type { Fleet } from "./fleet.js";
import type { SimDevice, VirtualBlock } from "./virtual-block.js";

interface Pending {
  da: string;
  sentAt: number;
}

export class CommandDriver {
  private readonly pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private credit = 0;
  private seq = 0;
  /** After a 429: no command before this time (the run's clock, ms), the server's Retry-After. */
  private notBefore = 0;
  private readonly puts = new Set<Promise<void>>();
  /** Aborts the PUTs still unanswered when drain()'s time ran out. */
  private readonly abandon = new AbortController();
  /**
   * PUTs abandoned unanswered at the stop: the server may still carry them out (the command then
   * reaches its block after the run), so they are neither errors nor lost commands.
   */
  abandonedAtStop = 0;
  paused = false;

  constructor(
    private readonly fleet: Fleet,
    private readonly api: ApiClient,
    private readonly metrics: Metrics,
    /** Commands per second, fleet-wide. */
    private readonly rate: number,
    private readonly rng: Random,
    private readonly log: (level: "info" | "warn" | "error", text: string) => void,
    private readonly clock: () => number = Date.now,
    private readonly lostAfterMs = 60_000,
  ) {}

  start(): void {
    if (this.rate <= 0 || this.timer) return;
    this.timer = setInterval(() => this.step(), 100);
  }

  /** Stops sending; commands already sent may still arrive. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Waits up to `ms` for the PUTs in flight to be answered, then abandons (aborts) the others. */
  async drain(ms: number): Promise<void> {
    if (this.puts.size === 0) return;
    const timer = setTimeout(() => this.abandon.abort(), Math.max(0, ms));
    await Promise.allSettled([...this.puts]);
    clearTimeout(timer);
    if (this.abandonedAtStop > 0) {
      const n = this.abandonedAtStop;
      this.log("warn", `${n} command PUT${n === 1 ? " was" : "s were"} still unanswered after ${Math.ceil(ms / 100) / 10} s: the server may carry ${n === 1 ? "it" : "them"} out after the run`);
    }
  }

  pendingList(): { guid: string; da: string; ageMs: number }[] {
    const now = this.clock();
    return [...this.pending].map(([guid, p]) => ({ guid, da: p.da, ageMs: now - p.sentAt }));
  }

  get inFlight(): number {
    return this.pending.size;
  }

  /** A command reached a virtual device. */
  arrived(_block: VirtualBlock, device: SimDevice, cmd: Command): void {
    const p = this.pending.get(device.guid);
    if (!p || p.da !== cmd.DA) return;
    this.pending.delete(device.guid);
    this.metrics.commandReceived(this.clock() - p.sentAt);
  }

  private step(): void {
    const now = this.clock();
    for (const [guid, p] of this.pending) {
      if (now - p.sentAt > this.lostAfterMs) {
        this.pending.delete(guid);
        this.metrics.error("command_lost");
        this.log("warn", `command to ${guid} did not arrive within ${this.lostAfterMs / 1000} s`);
      }
    }
    // Credit does not build up while the server's Retry-After runs: no burst when it ends.
    if (this.paused || now < this.notBefore) return;
    this.credit = Math.min(this.credit + this.rate / 10, Math.max(1, this.rate));
    while (this.credit >= 1) {
      this.credit -= 1;
      const target = this.pickTarget();
      if (!target) break;
      // A PUT is a request with the user token: past the server's limit, it waits for a later tick.
      if (!this.fleet.pacer.tryTake()) {
        this.credit += 1;
        break;
      }
      this.send(target);
    }
  }

  private pickTarget(): SimDevice | null {
    const blocks = this.fleet.blocks;
    for (let attempt = 0; attempt < 20; attempt++) {
      const b = blocks[this.rng.int(Math.max(1, this.fleet.running))];
      // The device exists on the server once the block's first reading (its initial state) was acked.
      if (!b || !b.activated || b.acked === 0 || b.state !== "online") continue;
      const actuators = [...b.devices.values()].filter((d) => d.kind === "actuator" && !this.pending.has(d.guid));
      if (actuators.length > 0) return this.rng.pick(actuators);
    }
    return null;
  }

  private nextValue(d: SimDevice): string {
    const last = d.last ?? "";
    if (last === "0" || last === "1") return last === "0" ? "1" : "0";
    if (/^[0-9A-Fa-f]{6}$/.test(last)) return this.rng.int(0x1000000).toString(16).padStart(6, "0").toUpperCase();
    return `sim${++this.seq}`;
  }

  private send(d: SimDevice): void {
    const da = this.nextValue(d);
    this.pending.set(d.guid, { da, sentAt: this.clock() });
    const p = this.api.actuate(d.guid, da, this.abandon.signal).then(
      () => this.metrics.commandSent(),
      (err: unknown) => {
        this.pending.delete(d.guid);
        if (this.abandon.signal.aborted) {
          this.abandonedAtStop++;
          return;
        }
        const status = (err as { status?: number }).status ?? 0;
        // 429: the user token is rate limited; no command was made, the device is picked again later,
        // and no command is sent before the server's Retry-After (none: the next tick, as before).
        if (status === 429) {
          const wait = retryAfterOf(err);
          this.notBefore = Math.max(this.notBefore, this.clock() + wait);
          return this.metrics.throttled("command_put");
        }
        this.metrics.error(`command_put_${status === 0 ? "network" : `http_${status}`}`);
        this.log("error", `PUT ${d.guid}: ${(err as Error).message}`);
      },
    );
    const tracked = p.finally(() => this.puts.delete(tracked));
    this.puts.add(tracked);
  }
}
