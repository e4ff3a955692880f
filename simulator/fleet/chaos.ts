/**
 * Chaos steps: drop a block's connection, pause a block, or make it burst, at a time of the run,
 * on blocks picked with the seeded random source. Drops and pauses undo themselves after `for_s`.
 */
import { Random } from "../random.js";
import type { ChaosSpec } from "../scenario/schema.js";
import type { Fleet } from "./fleet.js";

export class Chaos {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly rng: Random;
  /** Steps run so far. */
  applied = 0;

  constructor(
    private readonly fleet: Fleet,
    seed: number,
    private readonly log: (level: "info" | "warn" | "error", text: string) => void,
  ) {
    this.rng = new Random(seed).child("chaos");
  }

  /** Schedules the scenario's steps from now (the end of the warm-up). */
  start(steps: ChaosSpec[]): void {
    for (const step of steps) this.later(step.at_s * 1000, () => this.apply(step));
  }

  /** Runs one step now (also the TUI's "inject chaos" key). */
  apply(step: ChaosSpec): void {
    const hit = this.fleet.pick(step.blocks, this.rng);
    if (hit.length === 0) {
      this.log("warn", `chaos ${step.action}: no live block to hit`);
      return;
    }
    this.applied++;
    const names = hit.length <= 3 ? hit.map((b) => b.nodeId).join(", ") : `${hit.length} blocks`;
    switch (step.action) {
      case "drop":
        for (const b of hit) b.drop();
        this.log("warn", `chaos: dropped the connection of ${names} for ${step.for_s} s`);
        this.later(step.for_s * 1000, () => {
          for (const b of hit) b.restore();
          this.log("info", `chaos: connection of ${names} restored`);
        });
        break;
      case "pause":
        for (const b of hit) void b.pause();
        this.log("warn", `chaos: paused ${names} for ${step.for_s} s`);
        this.later(step.for_s * 1000, () => {
          for (const b of hit) void b.resume();
          this.log("info", `chaos: resumed ${names}`);
        });
        break;
      case "burst":
        for (const b of hit) b.burst(step.events);
        this.log("warn", `chaos: burst of ${step.events} readings from ${names}`);
        break;
    }
  }

  /** The n-th manual step of the TUI: drop, pause, burst in turn, on one block. */
  inject(n: number): void {
    const actions: ChaosSpec["action"][] = ["drop", "pause", "burst"];
    this.apply({ at_s: 0, action: actions[n % 3] as ChaosSpec["action"], blocks: 1, for_s: 5, events: 100 });
  }

  stop(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private later(ms: number, run: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      run();
    }, ms);
    this.timers.add(t);
  }
}
