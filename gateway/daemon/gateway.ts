/**
 * The gateway daemon's controller: owns the start-up and shutdown of the outbox, the token file,
 * the BlockAgent, the links (serial ports, MQTT with or without the embedded broker), the camera,
 * the frame recorder, the health server and sd_notify, as one list of parts (protocol/lifecycle.ts):
 * started in order, stopped in reverse, each stop isolated.
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
import type { MqttLink } from "../links/mqtt.js";
import type { Link } from "../links/types.js";
import { serverUrls } from "./config.js";
import type { GatewayConfig } from "./config-schema.js";
import { HealthServer } from "./health.js";
import { FileRecorder } from "./record.js";
import { SdNotify } from "./sd-notify.js";
import { Lifecycle, type Part } from "../../protocol/lifecycle.js";

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
  private mqttLink: MqttLink | null = null;
  private readonly notify: SdNotify;
  private readonly log: Logger;
  private readonly lifecycle: Lifecycle;
  readonly startedAt = Date.now();

  constructor(
    readonly config: Readonly<GatewayConfig>,
    private readonly deps: GatewayDeps = {},
  ) {
    this.log = deps.logger ?? pino({ level: config.logLevel, base: { name: "blockkit-gateway" } });
    this.notify = new SdNotify(this.log.child({ module: "gw:daemon" }), deps.env ?? process.env);
    this.lifecycle = new Lifecycle(this.log.child({ module: "gw:daemon" })).add(...this.parts());
  }

  /** Starts every part in order; a failed start stops what had started before it rejects. */
  start(): Promise<void> {
    return this.lifecycle.start();
  }

  /**
   * Stops every part in the reverse order, each one even when another's stop threw (a StopError
   * names them), and logs `stopped`. During a start, cancels it (start() rejects with StartCancelled).
   */
  stop(): Promise<void> {
    return this.lifecycle.stop();
  }

  /**
   * The gateway's parts in start order. Every reading is durable before a link can produce one
   * (the outbox first); the stop order is the reverse, so nothing acknowledged is lost.
   */
  private parts(): Part[] {
    const c = this.config;
    const parts: Part[] = [
      { name: "state dir", start: () => this.stateDir() },
      { name: "outbox", start: () => this.openOutbox(), stop: () => this.outbox?.close() },
    ];
    if (c.record) {
      parts.push({
        name: "recorder",
        start: () => {
          this.recorder = new FileRecorder(c.record as string, this.log.child({ module: "gw:record" }));
          this.recorder.start();
        },
        stop: () => this.recorder?.stop(),
      });
    }
    if (c.mqtt?.listen !== undefined) parts.push({ name: "mqtt broker", start: () => this.startBroker(), stop: () => this.broker?.stop() });
    // Built before the agent starts, so that no command arrives for a link it does not know yet.
    parts.push({ name: "links", start: () => this.buildLinks() });
    parts.push({
      name: "agent",
      start: () => this.agent.start(),
      stop: async () => {
        await this.agent.stop();
        await this.agent.client.close();
      },
    });
    const count = c.serial.length + (c.mqtt ? 1 : 0);
    for (let i = 0; i < count; i++) {
      parts.push({ name: `link ${i + 1}`, start: () => this.links[i]?.start(), stop: () => this.links[i]?.stop() });
    }
    if (c.health.enabled) {
      parts.push({
        name: "health",
        start: async () => {
          this.health = new HealthServer({ agent: () => this.agent.stats(), links: () => this.links, startedAt: this.startedAt }, c.health);
          await this.health.start();
        },
        stop: () => this.health?.stop(),
      });
    }
    parts.push({ name: "systemd", start: () => this.ready(), stop: () => this.notify.stopping() });
    return parts;
  }

  private stateDir(): void {
    const dir = this.config.stateDir;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const mode = statSync(dir).mode & 0o777;
    if ((mode & 0o077) !== 0) {
      // It holds the block token: tightened like the server's data dir.
      chmodSync(dir, 0o700);
      this.log.child({ module: "gw:daemon" }).warn({ stateDir: dir, was: mode.toString(8) }, "state dir was readable by others: tightened to 700");
    }
  }

  /** Opens the outbox and builds the agent on it (the agent's constructor only assigns). */
  private openOutbox(): void {
    const c = this.config;
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
      logger: this.log.child({ module: "gw:agent" }),
    });
  }

  private async startBroker(): Promise<void> {
    const m = this.config.mqtt as NonNullable<GatewayConfig["mqtt"]>;
    const { EmbeddedBroker } = await import("../links/mqtt-broker.js");
    // The broker acknowledges a node's reading only once the MQTT link stored it in the outbox.
    const offer = (topic: string, payload: Buffer, retained: boolean) => this.mqttLink?.offer(topic, payload, retained) ?? "refused";
    this.broker = new EmbeddedBroker({ port: m.listen as number, host: m.listenHost, users: m.users, logger: this.log.child({ module: "gw:mqtt" }), offer });
    await this.broker.start();
  }

  /**
   * The link objects (their constructors only assign), registered with the agent. Link modules
   * (serialport, mqtt, aedes) are loaded only when configured: RSS matters on a Pi.
   */
  private async buildLinks(): Promise<void> {
    const c = this.config;
    const log = (module: string): Logger => this.log.child({ module });
    const recorder = this.recorder ?? undefined;
    if (c.serial.length > 0) {
      const { SerialLink } = await import("../links/serial.js");
      c.serial.forEach((s, i) => {
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
    }
    if (c.mqtt) {
      const { MqttLink } = await import("../links/mqtt.js");
      const tls = c.mqtt.tls;
      this.mqttLink = new MqttLink({
        offeredByBroker: this.broker !== null,
        url: this.broker?.url ?? (c.mqtt.url as string),
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
      });
      this.links.push(this.mqttLink);
    }
    for (const l of this.links) this.agent.addLink(l);
    if (c.camera) {
      // The camera device must exist on the server before a user can ask it for a snapshot.
      this.agent.submit({ G: c.camera.G, V: 0, D: 1004, DA: "PLUGIN", kind: "config" }, "camera");
    }
  }

  /** Where its listeners are bound (null: not configured): with port 0, the ports the system picked. */
  listening(): { health: string | null; mqtt: string | null } {
    return { health: this.health?.url ?? null, mqtt: this.broker?.url ?? null };
  }

  /** Says so in the log (with the bound ports) and to systemd (READY=1). */
  private async ready(): Promise<void> {
    const c = this.config;
    const log = this.log.child({ module: "gw:daemon" });
    log.info({ nodeId: c.nodeId, server: serverUrls(c).baseUrl, links: this.links.map((l) => l.name), ...this.listening() }, "gateway started");
    if (this.links.length === 0) log.warn("no links: no hardware node can reach this gateway (configure serial ports or MQTT)");
    await this.notify.ready(() => this.agent.currentState !== "stopped");
  }
}
