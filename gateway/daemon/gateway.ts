/**
 * The gateway daemon's controller: owns the start-up and shutdown of the outbox, the token file,
 * the BlockAgent, the links (serial ports, MQTT with or without the embedded broker), the camera,
 * the frame recorder, the health server and sd_notify. Start order makes every reading durable
 * before a link can produce one; stop order is the reverse, so nothing acknowledged is lost.
 */
import { chmodSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import pino, { type Logger } from "pino";
import { BlockAgent } from "../agent/agent.js";
import { SqliteOutbox } from "../agent/sqlite-outbox.js";
import { FileTokenStore } from "../agent/token-file.js";
import type { CommandTarget } from "../agent/types.js";
import { snapshotSource } from "../camera/sources.js";
import type { EmbeddedBroker } from "../links/mqtt-broker.js";
import type { SerialBinding } from "../links/serial-port.js";
import type { Link } from "../links/types.js";
import { serverUrls } from "./config.js";
import type { GatewayConfig } from "./config-schema.js";
import { HealthServer } from "./health.js";
import { FileRecorder } from "./record.js";
import { SdNotify } from "./sd-notify.js";

export interface GatewayDeps {
  logger?: Logger;
  /** Serial binding (tests use the mock one). */
  serialBinding?: SerialBinding;
  env?: NodeJS.ProcessEnv;
}

export class Gateway {
  agent!: BlockAgent;
  links: (Link & CommandTarget)[] = [];
  health: HealthServer | null = null;
  broker: EmbeddedBroker | null = null;
  private outbox: SqliteOutbox | null = null;
  private recorder: FileRecorder | null = null;
  private readonly notify: SdNotify;
  private readonly log: Logger;
  private stopping: Promise<void> | null = null;
  readonly startedAt = Date.now();

  constructor(
    readonly config: Readonly<GatewayConfig>,
    private readonly deps: GatewayDeps = {},
  ) {
    this.log = deps.logger ?? pino({ level: config.logLevel, base: { name: "blockkit-gateway" } });
    this.notify = new SdNotify(this.log.child({ module: "gw:daemon" }), deps.env ?? process.env);
  }

  async start(): Promise<void> {
    const c = this.config;
    const log = (module: string): Logger => this.log.child({ module });
    mkdirSync(c.stateDir, { recursive: true, mode: 0o700 });
    const mode = statSync(c.stateDir).mode & 0o777;
    if ((mode & 0o077) !== 0) {
      // It holds the block token: tightened like the server's data dir.
      chmodSync(c.stateDir, 0o700);
      log("gw:daemon").warn({ stateDir: c.stateDir, was: mode.toString(8) }, "state dir was readable by others: tightened to 700");
    }
    this.outbox = new SqliteOutbox(join(c.stateDir, "outbox.db"), {
      maxRows: c.outbox.maxRows,
      maxBytes: c.outbox.maxBytes,
      reserveBytes: c.outbox.reserveBytes,
      maxAgeMs: c.outbox.maxAgeDays * 86_400_000,
      sync: c.outbox.sync,
    });
    const { baseUrl, streamUrl } = serverUrls(c);
    this.agent = new BlockAgent({
      nodeId: c.nodeId,
      baseUrl,
      streamUrl,
      outbox: this.outbox,
      tokens: new FileTokenStore(join(c.stateDir, "token")),
      userToken: c.userToken,
      camera: c.camera ? snapshotSource(c.camera) : undefined,
      uplink: { batchSize: c.outbox.batchSize, ratePerSecond: c.outbox.ratePerSecond },
      logger: log("gw:agent"),
    });
    if (c.record) {
      this.recorder = new FileRecorder(c.record, log("gw:record"));
      this.recorder.start();
    }
    const recorder = this.recorder ?? undefined;
    // Link modules (serialport, mqtt, aedes) are loaded only when configured: RSS matters on a Pi.
    const { SerialLink } = c.serial.length > 0 ? await import("../links/serial.js") : { SerialLink: null };
    c.serial.forEach((s, i) => {
      if (!SerialLink) return;
      this.links.push(
        new SerialLink({
          name: s.name ?? (i === 0 ? "serial" : `serial${i + 1}`),
          path: s.path,
          match: s.match,
          baudRate: s.baud,
          ackTimeoutMs: s.ackTimeoutMs,
          sink: this.agent,
          binding: this.deps.serialBinding,
          recorder,
          logger: log("gw:serial"),
        }),
      );
    });
    if (c.mqtt) {
      const { MqttLink } = await import("../links/mqtt.js");
      let url = c.mqtt.url;
      const embedded = c.mqtt.listen !== undefined;
      let link: InstanceType<typeof MqttLink> | null = null;
      if (embedded) {
        const { EmbeddedBroker } = await import("../links/mqtt-broker.js");
        // The broker acknowledges a node's reading only once the link stored it in the outbox.
        const offer = (topic: string, payload: Buffer, retained: boolean) => (link ? link.offer(topic, payload, retained) : "refused");
        this.broker = new EmbeddedBroker({ port: c.mqtt.listen as number, host: c.mqtt.listenHost, users: c.mqtt.users, logger: log("gw:mqtt"), offer });
        await this.broker.start();
        url = this.broker.url;
      }
      const tls = c.mqtt.tls;
      this.links.push(
        (link = new MqttLink({
          offeredByBroker: embedded,
          url: url as string,
          prefix: c.mqtt.prefix,
          username: this.broker?.ownCredentials?.username ?? c.mqtt.username,
          password: this.broker?.ownCredentials?.password ?? c.mqtt.password,
          clientId: c.mqtt.clientId,
          tls: tls && {
            ca: tls.ca ? readFileSync(tls.ca, "utf8") : undefined,
            cert: tls.cert ? readFileSync(tls.cert, "utf8") : undefined,
            key: tls.key ? readFileSync(tls.key, "utf8") : undefined,
            rejectUnauthorized: tls.rejectUnauthorized,
          },
          sink: this.agent,
          recorder,
          logger: log("gw:mqtt"),
        })),
      );
    }
    for (const l of this.links) this.agent.addLink(l);
    if (c.camera) {
      // The camera device must exist on the server before a user can ask it for a snapshot.
      this.agent.submit({ G: c.camera.G, V: 0, D: 1004, DA: "PLUGIN", kind: "config" }, "camera");
    }
    await this.agent.start();
    for (const l of this.links) await l.start();
    if (c.health.enabled) {
      this.health = new HealthServer({ agent: () => this.agent.stats(), links: () => this.links, startedAt: this.startedAt }, c.health);
      await this.health.start();
    }
    this.log.child({ module: "gw:daemon" }).info(
      { nodeId: c.nodeId, server: baseUrl, links: this.links.map((l) => l.name), health: this.health ? `http://${c.health.host}:${this.health.port}` : null },
      "gateway started",
    );
    if (this.links.length === 0) {
      this.log.child({ module: "gw:daemon" }).warn("no links: no hardware node can reach this gateway (configure serial ports or MQTT)");
    }
    await this.notify.ready(() => this.agent.currentState !== "stopped");
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    await this.notify.stopping();
    for (const l of [...this.links].reverse()) await l.stop().catch((err: unknown) => this.log.warn({ err, link: l.name }, "stopping a link failed"));
    await this.broker?.stop();
    await this.agent?.stop();
    await this.agent?.client.close();
    await this.health?.stop();
    await this.recorder?.stop();
    this.outbox?.close();
  }
}
