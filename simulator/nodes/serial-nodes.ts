/**
 * `blockkit sim nodes --serial PATH`: one fake serial node (serial-node.ts, the original firmwares'
 * behaviours) on the node's end of a serial line, its ports 1-3 plugged with the scenario's first
 * devices, sending the generators' readings as DEVICE frames; the node answers commands itself.
 */
import { makeGenerator } from "../generators.js";
import { Random } from "../random.js";
import type { LoadedScenario } from "../scenario/parse.js";
import type { SerialNodeProfile } from "./serial-node.js";
import { SerialNodePort } from "./serial-node-port.js";

export interface SerialNodeRun {
  path: string;
  profile: SerialNodeProfile;
  scenario: LoadedScenario;
  log(level: string, text: string): void;
  /** Resolves when the run should end. */
  until: Promise<void>;
}

export async function runSerialNode(o: SerialNodeRun): Promise<{ profile: SerialNodeProfile; readings: number; commands: number }> {
  const rng = new Random(o.scenario.seed);
  const ports = (["1", "2", "3"] as const).slice(0, o.scenario.devices.length);
  const devices = ports.map((G, i) => {
    const spec = o.scenario.devices[i] as LoadedScenario["devices"][number];
    return { G, D: spec.D, gen: makeGenerator(spec.generator, spec.rate, rng.child(`serial/${G}`)) };
  });
  // A pty carries no DTR: the node is a board wired to a UART, listening from the start.
  const port = new SerialNodePort(o.path, {
    profile: o.profile,
    plugged: devices.map((d) => ({ G: d.G, D: d.D })),
    resetOnOpen: false,
    onCommand: (c) => o.log("info", `command acted on: G ${c.G} D ${c.D} DA ${JSON.stringify(c.DA)}${c.overflow ? " (cut: over the firmware's buffer)" : ""}`),
  });
  await port.start();
  port.node.portOpened();
  let readings = 0;
  const timers = new Set<NodeJS.Timeout>();
  const next = (d: (typeof devices)[number]): void => {
    const delay = d.gen.nextDelay();
    if (delay === null) return;
    const t = setTimeout(() => {
      timers.delete(t);
      port.node.reading(d.G, d.D, d.gen.nextValue());
      readings++;
      next(d);
    }, delay);
    timers.add(t);
  };
  for (const d of devices) next(d);
  await o.until;
  for (const t of timers) clearTimeout(t);
  await port.stop();
  return { profile: o.profile, readings, commands: port.node.commands.length };
}
