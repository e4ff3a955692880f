/**
 * Hardware nodes behind a gateway, over MQTT (`blockkit sim nodes --mqtt URL`): each node is one
 * MQTT client publishing its devices on the gateway's topic scheme (protocol/mqtt-topics.ts, QoS 1):
 * a PLUGIN config per device when it connects, readings from the scenario's generators, and for an
 * actuator the new value after each command it receives on `<prefix>/<G>_<V>_<D>/command`, as an
 * ESP8266 node does. Latencies: publish -> PUBACK (the gateway acknowledges once the reading is in
 * its outbox) always; with a server and a token also node reading -> visible on the server (the
 * live stream's data frame) and command PUT -> command at the node.
 */
import { type MqttClient, connectAsync } from "mqtt";
import { commandTopic, parseNodePayload } from "../../protocol/mqtt-topics.js";
import { Scheduler } from "../fleet/scheduler.js";
import { type Generator, makeGenerator } from "../generators.js";
import { Latency, type LatencySummary } from "../metrics/histogram.js";
import { Random } from "../random.js";
import { type LoadedScenario, portAt } from "../scenario/parse.js";
import { EndToEnd, type NodesServer } from "./end-to-end.js";

export type { NodesServer } from "./end-to-end.js";

export interface MqttNodesOptions {
  url: string;
  prefix: string;
  /** The devices of each node, their generators and rates; `commands.rate` with a server. */
  scenario: LoadedScenario;
  nodes: number;
  server?: NodesServer;
  log(level: "info" | "warn" | "error", text: string): void;
}

interface NodeDevice {
  G: string;
  V: number;
  D: number;
  actuator: boolean;
  gen: Generator;
  value: string | null;
}

export interface NodesReport {
  nodes: number;
  devices: number;
  published: number;
  pubacked: number;
  errors: number;
  commands_sent: number;
  commands_received: number;
  latency_ms: { puback: LatencySummary; visible: LatencySummary; command: LatencySummary };
}

export class MqttNodes {
  private readonly clients: MqttClient[] = [];
  private readonly devices: NodeDevice[][] = [];
  private readonly scheduler = new Scheduler();
  private readonly puback = new Latency();
  /** With a server: reading -> visible on it, command PUT -> node. */
  private readonly e2e: EndToEnd | null;
  private stopped = false;
  private readonly counts = { published: 0, pubacked: 0, errors: 0, commands_received: 0 };

  constructor(private readonly o: MqttNodesOptions) {
    this.e2e = o.server ? new EndToEnd(o.server, (text) => this.error(text)) : null;
    const rng = new Random(o.scenario.seed);
    for (let n = 0; n < o.nodes; n++) {
      const list: NodeDevice[] = [];
      for (const spec of o.scenario.devices) {
        if (spec.generator.kind === "camera") continue;
        for (let k = 0; k < spec.count; k++) {
          // Ports of several nodes behind one gateway must differ: node n's port G is `n<n>p<G>`.
          const G = o.nodes > 1 ? `n${n}p${portAt(spec.G, k)}` : portAt(spec.G, k);
          list.push({ G, V: spec.V, D: spec.D, actuator: spec.generator.kind === "actuator", gen: makeGenerator(spec.generator, spec.rate, rng.child(`node${n}/${G}`)), value: null });
        }
      }
      this.devices.push(list);
    }
  }

  get deviceCount(): number {
    return this.devices.reduce((n, l) => n + l.length, 0);
  }

  async start(): Promise<void> {
    await this.e2e?.start();
    for (let n = 0; n < this.o.nodes; n++) {
      const client = await connectAsync(this.o.url, { clientId: `blockkit-sim-node-${this.o.scenario.seed}-${n}`, clean: true, reconnectPeriod: 1000 });
      client.on("error", (err) => this.error(`node ${n}: ${err.message}`));
      this.clients.push(client);
      const list = this.devices[n] as NodeDevice[];
      client.on("message", (topic, payload) => this.onCommand(list, client, topic, payload));
      await client.subscribeAsync(list.filter((d) => d.actuator).map((d) => commandTopic(this.o.prefix, d)), { qos: 1 });
      for (const d of list) {
        this.publish(client, d, "config", "PLUGIN");
        const initial = d.gen.initial();
        if (initial !== null) this.reading(client, d, initial);
        this.next(client, d);
      }
    }
    const e2e = this.e2e;
    if (e2e) {
      const actuators = this.devices.flat().filter((d) => d.actuator);
      e2e.sendCommands(actuators.map((d) => ({ guid: e2e.guid(d), value: () => d.value })), this.o.scenario.commands.rate, this.o.scenario.seed);
    }
  }

  private next(client: MqttClient, d: NodeDevice): void {
    const delay = d.gen.nextDelay();
    if (delay === null || this.stopped) return;
    this.scheduler.after(delay, () => {
      if (this.stopped) return;
      this.reading(client, d, d.gen.nextValue());
      this.next(client, d);
    });
  }

  private reading(client: MqttClient, d: NodeDevice, value: string): void {
    d.value = value;
    this.e2e?.sent(this.e2e.guid(d), value);
    this.publish(client, d, "data", value);
  }

  private publish(client: MqttClient, d: NodeDevice, kind: "data" | "config", payload: string): void {
    const at = Date.now();
    if (kind === "data") this.counts.published++;
    client.publishAsync(`${this.o.prefix}/${d.G}_${d.V}_${d.D}/${kind}`, payload, { qos: 1 }).then(
      () => {
        if (kind !== "data") return;
        this.counts.pubacked++;
        this.puback.record(Date.now() - at);
      },
      (err: unknown) => this.error(`publish ${d.G}_${d.V}_${d.D}: ${(err as Error).message}`),
    );
  }

  /** A command from the gateway: an actuator applies it and reports the new value back. */
  private onCommand(list: NodeDevice[], client: MqttClient, topic: string, payload: Buffer): void {
    const d = list.find((x) => topic === commandTopic(this.o.prefix, x));
    const value = parseNodePayload("data", payload);
    if (!d || value === null) return;
    this.counts.commands_received++;
    this.e2e?.arrived(this.e2e.guid(d));
    this.reading(client, d, value);
  }

  private error(text: string): void {
    this.counts.errors++;
    this.o.log("error", text);
  }

  report(): NodesReport {
    return {
      nodes: this.o.nodes,
      devices: this.deviceCount,
      ...this.counts,
      commands_sent: this.e2e?.commandsSent ?? 0,
      latency_ms: { puback: this.puback.summary(), visible: (this.e2e?.visible ?? new Latency()).summary(), command: (this.e2e?.command ?? new Latency()).summary() },
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.scheduler.stop();
    this.e2e?.stop();
    await Promise.all(this.clients.map((c) => c.endAsync()));
  }
}
