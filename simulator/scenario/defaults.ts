/** Default value generators per device type, and the scenario that flags build when no file is given. */
import type { GeneratorSpec } from "./schema.js";

/** A generator that suits the device type: what a real sensor of that kind would report. */
export function defaultGenerator(type: string, d: number): GeneratorSpec {
  switch (type) {
    case "temperature":
      return { kind: "sine", min: 18, max: 24, period_s: 600, noise: 0.2, decimals: 1 };
    case "humidity":
      return { kind: "walk", start: 50, step: 1, min: 20, max: 90, decimals: 0 };
    case "light":
      return { kind: "sine", min: 0, max: 100, period_s: 3600, noise: 2, decimals: 0 };
    case "button":
    case "PIR":
      return { kind: "button", mean_interval_s: 30 };
    case "rf433":
      return d === 1001
        ? { kind: "actuator", initial: "0" }
        : { kind: "rf", codes: ["010101010101010101010101", "110011001100110011001100", "A1B2C3"], mean_interval_s: 60 };
    case "camera":
      return { kind: "camera", width: 64, height: 48 };
    case "relay":
      return { kind: "actuator", initial: "0" };
    case "rgbled":
    case "rgbled8":
      return { kind: "actuator", initial: "000000" };
    case "display":
      return { kind: "actuator", initial: "" };
    default:
      return { kind: "walk", start: 500, step: 10, min: 0, max: 1023, decimals: 0 };
  }
}

/** The device mix of `--devices M`: the first M entries, cycling. */
const MIX = ["temperature", "relay", "humidity", "button", "light", "rgbled", "rf433", "sound"];

export interface ScenarioFlags {
  blocks?: number;
  devices?: number;
  /** Readings per second per block, spread over its periodic sensors. */
  rate?: number;
  duration?: number;
  seed?: number;
}

/** The scenario document of the flags (validated like a file). */
export function scenarioFromFlags(f: ScenarioFlags): Record<string, unknown> {
  const m = f.devices ?? 2;
  const types = Array.from({ length: m }, (_v, i) => MIX[i % MIX.length] as string);
  const periodic = types.filter((t) => ["temperature", "humidity", "light", "sound"].includes(t)).length;
  const rate = f.rate ?? 1;
  return {
    name: "flags",
    seed: f.seed ?? 1,
    blocks: { count: f.blocks ?? 1 },
    devices: types.map((type, i) => ({
      type,
      G: String(i + 1),
      rate: periodic > 0 ? rate / periodic : 0,
    })),
    duration_s: f.duration ?? 30,
  };
}

/** Applies flags on top of a loaded scenario document (flags win). */
export function overrideWithFlags(doc: Record<string, unknown>, f: ScenarioFlags): Record<string, unknown> {
  const out = structuredClone(doc);
  if (f.blocks !== undefined) out.blocks = { ...((out.blocks as object | undefined) ?? {}), count: f.blocks };
  if (f.duration !== undefined) out.duration_s = f.duration;
  if (f.seed !== undefined) out.seed = f.seed;
  if (f.rate !== undefined && Array.isArray(out.devices)) {
    for (const d of out.devices as Record<string, unknown>[]) d.rate = f.rate;
  }
  return out;
}
