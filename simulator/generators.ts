/**
 * Value generators of the virtual devices. Each is a pure sequence driven by the seeded random
 * source and its own virtual clock (reading index × interval), never by wall time, so the same
 * seed gives the same values however the event loop schedules the blocks.
 */
import type { Random } from "./random.js";
import type { GeneratorSpec } from "./scenario/schema.js";

export interface Generator {
  /** Delay before the next spontaneous reading, ms; null when the device never reports on its own. */
  nextDelay(): number | null;
  /** The value of that reading. */
  nextValue(): string;
  /** The value reported once when the block comes up (actuator state); null for none. */
  initial(): string | null;
}

function fixed(v: number, decimals: number): string {
  return v.toFixed(decimals);
}

class Periodic implements Generator {
  private t = 0;
  private first = true;

  constructor(
    private readonly rng: Random,
    private readonly intervalMs: number,
    private readonly valueAt: (tMs: number) => string,
  ) {}

  nextDelay(): number | null {
    if (!(this.intervalMs > 0) || !Number.isFinite(this.intervalMs)) return null;
    if (this.first) {
      // A random phase spreads ten thousand blocks over the interval instead of a thundering herd.
      this.first = false;
      return this.rng.uniform(0, this.intervalMs);
    }
    this.t += this.intervalMs;
    return this.intervalMs;
  }

  nextValue(): string {
    return this.valueAt(this.t);
  }

  initial(): null {
    return null;
  }
}

class Poisson implements Generator {
  constructor(
    private readonly rng: Random,
    private readonly meanMs: number,
    private readonly value: () => string,
  ) {}

  nextDelay(): number {
    return this.rng.exponential(this.meanMs);
  }

  nextValue(): string {
    return this.value();
  }

  initial(): null {
    return null;
  }
}

class Silent implements Generator {
  constructor(private readonly state: string | null) {}
  nextDelay(): null {
    return null;
  }
  nextValue(): string {
    return this.state ?? "";
  }
  initial(): string | null {
    return this.state;
  }
}

/** Builds the generator of a device. `rate` is readings per second for periodic kinds. */
export function makeGenerator(spec: GeneratorSpec, rate: number, rng: Random): Generator {
  const intervalMs = rate > 0 ? 1000 / rate : Number.POSITIVE_INFINITY;
  switch (spec.kind) {
    case "constant":
      return new Periodic(rng, intervalMs, () => String(spec.value));
    case "sine": {
      const mid = (spec.min + spec.max) / 2;
      const amp = (spec.max - spec.min) / 2;
      const periodMs = spec.period_s * 1000;
      return new Periodic(rng, intervalMs, (t) => {
        const v = mid + amp * Math.sin((2 * Math.PI * t) / periodMs) + (spec.noise > 0 ? spec.noise * rng.normal() : 0);
        return fixed(v, spec.decimals);
      });
    }
    case "walk": {
      let v = Math.min(spec.max, Math.max(spec.min, spec.start));
      return new Periodic(rng, intervalMs, () => {
        v = Math.min(spec.max, Math.max(spec.min, v + rng.uniform(-spec.step, spec.step)));
        return fixed(v, spec.decimals);
      });
    }
    case "button":
      return new Poisson(rng, spec.mean_interval_s * 1000, () => "1");
    case "rf":
      return new Poisson(rng, spec.mean_interval_s * 1000, () => rng.pick(spec.codes));
    case "camera":
      return new Silent(null);
    case "actuator":
      return new Silent(spec.initial);
  }
}
