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
import WebSocket from "ws";
import type { ApiClient } from "../../protocol/api-client.js";
import { makeGuid } from "../../protocol/guid.js";
import { commandTopic, parseNodePayload } from "../../protocol/mqtt-topics.js";
import { parseStreamFrame, streamAddress } from "../../protocol/stream.js";
import { Scheduler } from "../fleet/scheduler.js";
import { type Generator, makeGenerator } from "../generators.js";
import { Latency, type LatencySummary } from "../metrics/histogram.js";
import { Random } from "../random.js";
import { type LoadedScenario, portAt } from "../scenario/parse.js";

export interface NodesServer {
  api: ApiClient;
  /** The server's root (`{auth_url}`), for the live stream. */
  authUrl: string;
  token: string;
  /** The node id of the gateway the nodes are behind: its devices are `<id>_<G>_<V>_<D>`. */
  gatewayNodeId: string;
}

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
  private readonly visible = new Latency();
  private readonly command = new Latency();
  /** Publish times of readings not yet seen on the server, per GUID, oldest first. */
  private readonly unseen = new Map<string, number[]>();
  private readonly commandsAt = new Map<string, number>();
  private stream: WebSocket | null = null;
  private commandTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly counts = { published: 0, pubacked: 0, errors: 0, commands_sent: 0, commands_received: 0 };

  constructor(private readonly o: MqttNodesOptions) {
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

  private guid(d: NodeDevice): string | null {
    return this.o.server ? makeGuid({ node: this.o.server.gatewayNodeId, G: d.G, V: d.V, D: d.D }) : null;
  }

  async start(): Promise<void> {
    if (this.o.server) await this.follow(this.o.server);
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
    const rate = this.o.scenario.commands.rate;
    const actuators = this.devices.flat().filter((d) => d.actuator);
    if (this.o.server && rate > 0 && actuators.length > 0) {
      const api = this.o.server.api;
      const rng = new Random(this.o.scenario.seed).child("commands");
      this.commandTimer = setInterval(() => {
        const d = rng.pick(actuators);
        const guid = this.guid(d) as string;
        if (this.commandsAt.has(guid)) return;
        const DA = d.value === "1" ? "0" : "1";
        this.commandsAt.set(guid, Date.now());
        this.counts.commands_sent++;
        api.actuate(guid, DA).catch((err: unknown) => {
          this.commandsAt.delete(guid);
          this.error(`command to ${guid}: ${(err as Error).message}`);
        });
      }, 1000 / rate);
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
    const guid = this.guid(d);
    if (guid && this.stream) {
      const q = this.unseen.get(guid) ?? [];
      q.push(Date.now());
      this.unseen.set(guid, q);
    }
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
    const guid = this.guid(d);
    const sentAt = guid ? this.commandsAt.get(guid) : undefined;
    if (guid && sentAt !== undefined) {
      this.command.record(Date.now() - sentAt);
      this.commandsAt.delete(guid);
    }
    this.reading(client, d, value);
  }

  /** Follows the server's live stream: a data frame of one of the nodes' devices ends its oldest unseen reading. */
  private follow(server: NodesServer): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(streamAddress(server.authUrl, { userToken: server.token }), { handshakeTimeout: 10_000 });
      ws.once("open", () => {
        this.stream = ws;
        resolve();
      });
      ws.once("error", (err) => (this.stream ? this.error(`live stream: ${err.message}`) : reject(new Error(`live stream of ${server.authUrl}: ${err.message}`))));
      ws.on("message", (data, binary) => {
        if (binary) return;
        let frame;
        try {
          frame = parseStreamFrame(String(data));
        } catch {
          return;
        }
        if (frame.type !== "data") return;
        const q = this.unseen.get(frame.guid);
        const at = q?.shift();
        if (at !== undefined) this.visible.record(Date.now() - at);
      });
    });
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
      latency_ms: { puback: this.puback.summary(), visible: this.visible.summary(), command: this.command.summary() },
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.scheduler.stop();
    if (this.commandTimer) clearInterval(this.commandTimer);
    await Promise.all(this.clients.map((c) => c.endAsync()));
    this.stream?.close();
  }
}
