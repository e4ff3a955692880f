/**
 * The MQTT link: nodes publish readings under `<prefix>/<G>_<V>_<D>/{data,heartbeat,config}`; the
 * gateway publishes commands to `…/command` (QoS 1, never retained) and keeps its status retained
 * at `<prefix>/gateway/status` (`online`; the broker publishes the `offline` last will if the
 * gateway vanishes). mqtt.js reconnects by itself; each reconnect is counted.
 */
import { createConnection } from "node:net";
import mqtt, { type IClientOptions, MqttClient } from "mqtt";
import pino, { type Logger } from "pino";
import {
  DEFAULT_MQTT_PREFIX,
  commandTopic,
  nodeSubscriptions,
  parseNodePayload,
  parseNodeTopic,
  statusTopic,
  validPrefix,
} from "../../protocol/mqtt-topics.js";
import type { Command } from "../../protocol/payloads.js";
import type { CommandTarget, Reading } from "../agent/types.js";
import type { FrameRecorder, Link, LinkState, Offered, ReadingSink } from "./types.js";

export interface MqttTls {
  /** PEM text of the CA, client certificate and key. */
  ca?: string;
  cert?: string;
  key?: string;
  /** Default true. */
  rejectUnauthorized?: boolean;
}

export interface MqttLinkOptions {
  /** `mqtt://`, `mqtts://`, `ws://` or `wss://` URL of the broker. */
  url: string;
  /** Topic prefix. Default `blockkit`. */
  prefix?: string;
  username?: string;
  password?: string;
  tls?: MqttTls;
  clientId?: string;
  sink: ReadingSink;
  recorder?: FrameRecorder;
  logger?: Logger;
  /** mqtt.js reconnect period, ms. Default 2 000. */
  reconnectPeriodMs?: number;
  /** Link name. Default `mqtt`. */
  name?: string;
  /**
   * The broker is the embedded one and hands node messages to `offer()` before it acknowledges
   * them (its publish hook): the link then subscribes to no node topic.
   */
  offeredByBroker?: boolean;
}

export class MqttLink implements Link, CommandTarget {
  readonly name: string;
  readonly prefix: string;
  state: LinkState = "down";
  private client: MqttClient | null = null;
  private readonly log: Logger;
  private readonly seen = new Set<string>();
  private everConnected = false;
  private readonly stats = { messagesIn: 0, readings: 0, garbage: 0, retainedSkipped: 0, commandsPublished: 0, reconnects: 0, refused: 0 };

  constructor(private readonly o: MqttLinkOptions) {
    if (!/^(mqtts?|wss?|tcp|ssl):\/\//.test(o.url ?? "")) throw new TypeError(`MqttLink: url must be mqtt://, mqtts://, ws:// or wss://, got "${o.url}"`);
    this.prefix = o.prefix ?? DEFAULT_MQTT_PREFIX;
    if (!validPrefix(this.prefix)) throw new TypeError(`MqttLink: prefix "${this.prefix}" must be topic levels without wildcards`);
    this.name = o.name ?? "mqtt";
    this.log = o.logger ?? pino({ level: "silent" });
  }

  async start(): Promise<void> {
    if (this.client) return;
    const status = statusTopic(this.prefix);
    const opts: IClientOptions = {
      clientId: this.o.clientId ?? `blockkit-gw-${Math.random().toString(16).slice(2, 10)}`,
      username: this.o.username,
      password: this.o.password,
      reconnectPeriod: this.o.reconnectPeriodMs ?? 2_000,
      connectTimeout: 10_000,
      clean: true,
      will: { topic: status, payload: Buffer.from("offline"), qos: 1, retain: true },
      // mqtt-packet otherwise pre-builds 65,536 two-byte Buffers when it writes its first packet:
      // 6 MB of heap on a Pi to save a 2-byte allocation per packet. The switch is global to
      // mqtt-packet, so it also covers the embedded aedes broker (same module), which this link
      // connects to right after it starts listening.
      writeCache: false,
      ...(this.o.tls ?? {}),
    };
    this.state = "opening";
    const client = connect(this.o.url, opts);
    this.client = client;
    client.on("connect", () => {
      if (this.everConnected) this.stats.reconnects++;
      this.everConnected = true;
      this.state = "up";
      this.log.info({ url: redact(this.o.url), prefix: this.prefix }, "MQTT connected");
      client.publish(status, "online", { qos: 1, retain: true });
      if (this.o.offeredByBroker) return;
      client.subscribe(nodeSubscriptions(this.prefix), { qos: 1 }, (err) => {
        if (err) this.log.error({ err: err.message }, "MQTT subscribe failed");
      });
    });
    client.on("close", () => {
      // stop() lets go of the client first: a close it asked for is no loss.
      if (this.state === "up" && this.client) this.log.warn("MQTT connection lost: reconnecting");
      if (this.client) this.state = "down";
    });
    client.on("error", (err) => this.log.warn({ err: err.message }, "MQTT error"));
    // mqtt.js acknowledges a QoS 1 message (PUBACK to the broker) only once handleMessage calls
    // back: a reading the outbox refused is answered with an error instead, so no PUBACK.
    client.handleMessage = (packet, done) => {
      const r = this.offer(packet.topic, typeof packet.payload === "string" ? Buffer.from(packet.payload) : packet.payload, packet.retain);
      done(r === "refused" ? new Error("outbox cannot write: reading refused") : undefined);
    };
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = null;
    if (!client) return;
    if (client.connected) {
      // A clean stop says offline itself (the will is only for a gateway that vanishes).
      await client.publishAsync(statusTopic(this.prefix), "offline", { qos: 1, retain: true }).catch(() => undefined);
    }
    await client.endAsync();
    this.state = "down";
  }

  owns(cmd: Command): boolean {
    return this.seen.has(`${cmd.G}_${cmd.V}_${cmd.D}`);
  }

  async deliver(cmd: Command): Promise<void> {
    const client = this.client;
    if (!client) throw new Error("MQTT link is stopped");
    await client.publishAsync(commandTopic(this.prefix, cmd), cmd.DA, { qos: 1, retain: false });
    this.stats.commandsPublished++;
  }

  counters(): Record<string, number> {
    return { ...this.stats };
  }

  /**
   * A message a node published: stored in the outbox (`stored`), refused because the outbox cannot
   * write (`refused`: do not acknowledge it), or not a reading (`ignored`).
   */
  offer(topic: string, payload: Buffer, retained: boolean): Offered {
    const t = parseNodeTopic(this.prefix, topic);
    if (!t) return "ignored";
    this.stats.messagesIn++;
    this.o.recorder?.record(this.name, payload.toString("utf8"), topic);
    if (retained && t.kind !== "config") {
      // A retained reading is an old one the broker replays on every subscribe: not a new reading.
      this.stats.retainedSkipped++;
      return "ignored";
    }
    const value = parseNodePayload(t.kind, payload);
    if (value === null) {
      this.stats.garbage++;
      this.log.debug({ topic }, "MQTT payload without a usable value skipped");
      return "ignored";
    }
    const reading: Reading = { G: t.G, V: t.V, D: t.D, DA: value, kind: t.kind };
    this.seen.add(`${t.G}_${t.V}_${t.D}`);
    const sink = this.o.sink;
    const n = sink.store ? sink.store([reading], this.name) : sink.submitMany([reading], this.name);
    if (n === "refused") {
      this.stats.refused++;
      return "refused";
    }
    this.stats.readings += n;
    return "stored";
  }
}

/**
 * A plain TCP broker URL (the embedded broker, or a LAN broker; credentials in the options, not in
 * the URL) gets a client over node:net directly: mqtt.connect() loads every transport it knows on
 * its first call (WebSocket, SOCKS proxy, TLS), a few MB of RSS that a Pi does not need for
 * `mqtt://`. Other URLs go through mqtt.connect().
 */
function connect(url: string, opts: IClientOptions): MqttClient {
  const u = new URL(url);
  const plain = (u.protocol === "mqtt:" || u.protocol === "tcp:") && u.username === "" && u.password === "" && u.search === "";
  if (!plain || process.env.MQTTJS_SOCKS_PROXY) return mqtt.connect(url, opts);
  const host = u.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = u.port ? Number(u.port) : 1883;
  const client = new MqttClient(() => createConnection({ host, port }), opts);
  // What mqtt.connect() does too: errors reach the caller's listener, never an unhandled 'error'.
  client.on("error", () => undefined);
  return client;
}

/** Broker URLs in logs never carry a password. */
function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:…@");
}
