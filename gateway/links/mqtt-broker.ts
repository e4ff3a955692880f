/**
 * The embedded MQTT broker (aedes 1.x) for ESP8266/ESP32 nodes on the LAN: `--mqtt-listen PORT`.
 * The gateway's own MQTT link connects to it like any node would, so the embedded and the
 * external-broker setups run the same link code.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { type AddressInfo, type Server, createServer } from "node:net";
import { Aedes } from "aedes";
import pino, { type Logger } from "pino";
import { listenUrl } from "../../protocol/listen-url.js";
import { MqttUsers } from "./mqtt-users.js";

export interface EmbeddedBrokerOptions {
  /** TCP port; 0 picks a free one (tests). */
  port: number;
  /**
   * Default `127.0.0.1`: only clients on this machine. Listening on the LAN (`0.0.0.0` or an
   * address) needs `users`: anyone on the LAN could otherwise read every reading and publish fake ones.
   */
  host?: string;
  /** Accounts of the nodes (mqtt-users.ts); when given, every client must log in with one. */
  users?: readonly { username: string; passwordHash: string }[];
  logger?: Logger;
  /**
   * Sees every message a client publishes before the broker acknowledges it (PUBACK) or forwards
   * it: `refused` means the message was not stored and must not be acknowledged. MQTT 3.1.1 has no
   * negative PUBACK, so the broker closes that client's connection without one; the node keeps the
   * message and publishes it again after it reconnects.
   */
  offer?: (topic: string, payload: Buffer, retained: boolean) => "stored" | "refused" | "ignored";
}

export class EmbeddedBroker {
  private broker: Aedes | null = null;
  private server: Server | null = null;
  private readonly log: Logger;
  /** The port actually listened on (after start). */
  port = 0;

  private readonly users: MqttUsers | null;
  /** The gateway's own client's account when the broker has users (a fresh one per start). */
  readonly own = { username: `blockkit-gateway-${randomBytes(4).toString("hex")}`, password: randomBytes(24).toString("base64url") };

  constructor(private readonly o: EmbeddedBrokerOptions) {
    if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) throw new TypeError(`EmbeddedBroker: port must be 0-65535, got ${String(o.port)}`);
    const host = o.host ?? "127.0.0.1";
    if (!isLoopback(host) && !o.users?.length) {
      throw new TypeError(`EmbeddedBroker: listening on ${host} (the LAN) needs users (username and scrypt password hash per node)`);
    }
    this.users = o.users?.length ? new MqttUsers(o.users) : null;
    this.log = o.logger ?? pino({ level: "silent" });
  }

  /**
   * Where a client on this machine reaches the broker (after start): the gateway's own client, and
   * the ready line. On the listen address itself: a broker bound to one LAN or IPv6 address is not
   * reachable on 127.0.0.1.
   */
  get url(): string {
    return listenUrl("mqtt", this.o.host ?? "127.0.0.1", this.port);
  }

  /** The credentials the gateway's own client must use (undefined: the broker has no users). */
  get ownCredentials(): { username: string; password: string } | undefined {
    return this.users ? this.own : undefined;
  }

  async start(): Promise<void> {
    const broker = await Aedes.createBroker();
    const offer = this.o.offer;
    if (offer) {
      const allow = broker.authorizePublish.bind(broker);
      broker.authorizePublish = (client, packet, callback) => {
        allow(client, packet, (err) => {
          if (err || !client) return callback(err);
          const payload = typeof packet.payload === "string" ? Buffer.from(packet.payload) : packet.payload;
          if (offer(packet.topic, payload, packet.retain) === "refused") return callback(new Error("outbox cannot write: reading refused"));
          callback(null);
        });
      };
    }
    const users = this.users;
    if (users) {
      const own = Buffer.from(this.own.password);
      broker.authenticate = (client, username, password, callback) => {
        const ok =
          username === this.own.username ? password !== undefined && password.length === own.length && timingSafeEqual(password, own) : users.check(username, password);
        if (!ok) this.log.warn({ client: client.id, username }, "mqtt login refused");
        // aedes answers CONNACK "bad user name or password" (4) for an error with returnCode 4.
        callback(ok ? null : Object.assign(new Error("bad user name or password"), { returnCode: 4 }), ok);
      };
    }
    broker.on("clientError", (client, err) => this.log.debug({ client: client.id, err: err.message }, "mqtt client error"));
    broker.on("connectionError", (_client, err) => this.log.debug({ err: err.message }, "mqtt connection error"));
    const server = createServer(broker.handle);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.o.port, this.o.host ?? "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    this.broker = broker;
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    this.log.info({ port: this.port, host: this.o.host ?? "127.0.0.1", url: this.url, users: this.users !== null }, "embedded MQTT broker listening");
  }

  async stop(): Promise<void> {
    const { broker, server } = this;
    this.broker = null;
    this.server = null;
    if (broker) await new Promise<void>((r) => broker.close(() => r()));
    if (server) {
      await new Promise<void>((r) => server.close(() => r()));
    }
  }
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host.startsWith("127.");
}
