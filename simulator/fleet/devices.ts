/**
 * A simulated block's virtual devices: one SimDevice per port of each of the scenario's device
 * specs, with its seeded generator and the fields its scheduled readings reuse. VirtualBlock
 * (virtual-block.ts) makes them once, at its construction, and runs them.
 */
import { makeGuid } from "../../protocol/guid.js";
import { type Generator, makeGenerator } from "../generators.js";
import type { Random } from "../random.js";
import { type ResolvedDevice, portAt } from "../scenario/parse.js";
import type { ScheduledJob } from "./scheduler.js";

export interface SimDevice {
  /** `G_V_D` */
  key: string;
  guid: string;
  G: string;
  V: number;
  D: number;
  kind: "sensor" | "actuator" | "camera";
  event: "data" | "heartbeat";
  gen: Generator;
  last: string | null;
  job: ScheduledJob | null;
  /** The last job object, scheduled again for the next reading (see Scheduler.after). */
  spare: ScheduledJob | null;
  /** The device's scheduled reading, made once (not a closure per reading). */
  fire: (() => void) | null;
  /**
   * At a pause, how long its next reading still had to wait, ms: the resume schedules it after
   * that, so each device keeps its phase (restarting every generator at once put the whole fleet
   * in step: per-second rates swung between none and twice the real one).
   */
  held: number | null;
}

/** A block's devices by `G_V_D`, and the frame size of its camera (the last camera spec's), if any. */
export function makeDevices(nodeId: string, specs: ResolvedDevice[], rng: Random): { devices: Map<string, SimDevice>; cameraSize: { width: number; height: number } | null } {
  const devices = new Map<string, SimDevice>();
  let cameraSize: { width: number; height: number } | null = null;
  for (const spec of specs) {
    if (spec.generator.kind === "camera") cameraSize = { width: spec.generator.width, height: spec.generator.height };
    for (let k = 0; k < spec.count; k++) {
      const G = portAt(spec.G, k);
      const key = `${G}_${spec.V}_${spec.D}`;
      const gk = spec.generator.kind;
      devices.set(key, {
        key,
        guid: makeGuid({ node: nodeId, G, V: spec.V, D: spec.D }),
        G,
        V: spec.V,
        D: spec.D,
        kind: gk === "actuator" ? "actuator" : gk === "camera" ? "camera" : "sensor",
        event: spec.event,
        gen: makeGenerator(spec.generator, spec.rate, rng.child(`${nodeId}/${key}`)),
        last: null,
        job: null,
        spare: null,
        fire: null,
        held: null,
      });
    }
  }
  return { devices, cameraSize };
}
