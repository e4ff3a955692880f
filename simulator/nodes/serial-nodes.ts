/**
 * `blockkit sim nodes --serial PATH`: one fake serial node (serial-node.ts, the original firmwares'
 * behaviours) on the node's end of a serial line, its ports 1-3 plugged with the scenario's first
 * devices, sending the generators' readings as DEVICE frames; the node answers commands itself.
 * With a server, the end-to-end latencies as over MQTT (end-to-end.ts).
 */
import { makeGenerator } from "../generators.js";
import type { LatencySummary } from "../metrics/histogram.js";
import { Random } from "../random.js";
import type { LoadedScenario } from "../scenario/parse.js";
import type { SerialNodeProfile } from "./serial-node.js";
import { SerialNodePort } from "./serial-node-port.js";
import { EndToEnd, type NodesServer } from "./end-to-end.js";

export interface SerialNodeRun {
  path: string;
  profile: SerialNodeProfile;
  scenario: LoadedScenario;
  log(level: string, text: string): void;
  /** Resolves when the run should end. */
  until: Promise<void>;
  /** The server behind the gateway: latencies, and `commands.rate` commands a second to the actuators. */
  server?: NodesServer;
}

export interface SerialNodeResult {
  profile: SerialNodeProfile;
  readings: number;
  commands: number;
  /** With a server. */
  commands_sent?: number;
  errors?: number;
  latency_ms?: { visible: LatencySummary; command: LatencySummary };
}

export async function runSerialNode(o: SerialNodeRun): Promise<SerialNodeResult> {
  const rng = new Random(o.scenario.seed);
  const ports = (["1", "2", "3"] as const).slice(0, o.scenario.devices.length);
  const devices = ports.map((G, i) => {
    const spec = o.scenario.devices[i] as LoadedScenario["devices"][number];
    return { G, D: spec.D, actuator: spec.generator.kind === "actuator", value: null as string | null, gen: makeGenerator(spec.generator, spec.rate, rng.child(`serial/${G}`)) };
  });
  let errors = 0;
  const e2e = o.server
    ? new EndToEnd(o.server, (text) => {
        errors++;
        o.log("error", text);
      })
    : null;
  // The node speaks V 0 on ports 1-3: its devices are <gateway>_<G>_0_<D> on the server.
  const guid = (d: { G: string; D: number }): string => (e2e as EndToEnd).guid({ G: d.G, V: 0, D: d.D });
  await e2e?.start();
  // A pty carries no DTR: the node is a board wired to a UART, listening from the start.
  const port = new SerialNodePort(o.path, {
    profile: o.profile,
    plugged: devices.map((d) => ({ G: d.G, D: d.D })),
    resetOnOpen: false,
    onCommand: (c) => {
      o.log("info", `command acted on: G ${c.G} D ${c.D} DA ${JSON.stringify(c.DA)}${c.overflow ? " (cut: over the firmware's buffer)" : ""}`);
      const d = devices.find((x) => x.G === c.G && x.D === c.D);
      if (d) d.value = String(c.DA);
      e2e?.arrived(guid(c));
    },
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
      const value = d.gen.nextValue();
      e2e?.sent(guid(d), value);
      port.node.reading(d.G, d.D, value);
      readings++;
      next(d);
    }, delay);
    timers.add(t);
  };
  for (const d of devices) next(d);
  e2e?.sendCommands(
    devices.filter((d) => d.actuator).map((d) => ({ guid: guid(d), value: () => d.value })),
    o.scenario.commands.rate,
    o.scenario.seed,
  );
  await o.until;
  for (const t of timers) clearTimeout(t);
  // Readings sent at the very end are given a moment to show on the server.
  if (e2e) await new Promise((r) => setTimeout(r, 1000));
  e2e?.stop();
  await port.stop();
  const result: SerialNodeResult = { profile: o.profile, readings, commands: port.node.commands.length };
  if (!e2e) return result;
  return { ...result, commands_sent: e2e.commandsSent, errors, latency_ms: { visible: e2e.visible.summary(), command: e2e.command.summary() } };
}
