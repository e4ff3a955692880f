/**
 * The gateway's configuration: a TypeBox schema and the defaults. A config file (JSON or YAML)
 * holds the same shape; flags and BLOCKKIT_* environment variables override it (config.ts).
 */
import { type Static, Type } from "@sinclair/typebox";
import { NODE_ID_PATTERN, PORT_PATTERN } from "../../protocol/guid.js";

const Url = Type.String({ pattern: "^https?://[^\\s]+$", description: "http(s) URL" });
const Port = Type.Integer({ minimum: 0, maximum: 65535 });

const UsbMatch = Type.Object(
  {
    vendorId: Type.Optional(Type.String({ pattern: "^[0-9A-Fa-f]{4}$" })),
    productId: Type.Optional(Type.String({ pattern: "^[0-9A-Fa-f]{4}$" })),
    serialNumber: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const SerialConfig = Type.Object(
  {
    /** Link name; commands are routed by it. Default `serial` (then `serial2`, …). */
    name: Type.Optional(Type.String({ pattern: "^[a-z][a-z0-9-]{0,31}$" })),
    path: Type.Optional(Type.String({ minLength: 1 })),
    match: Type.Optional(UsbMatch),
    baud: Type.Integer({ minimum: 50, maximum: 4_000_000, default: 9600 }),
    ackTimeoutMs: Type.Integer({ minimum: 100, maximum: 60_000, default: 2000 }),
  },
  { additionalProperties: false },
);

export const MqttConfig = Type.Object(
  {
    /** Embedded broker port (ESP nodes on the LAN connect here). Exclusive with `url`. */
    listen: Type.Optional(Port),
    /** Address of the embedded broker: loopback by default; a LAN address needs `users`. */
    listenHost: Type.String({ default: "127.0.0.1" }),
    /** Accounts of the embedded broker's nodes: user name and `scrypt$salt$hash` (blockkit gateway mqtt-password). */
    users: Type.Optional(
      Type.Array(
        Type.Object(
          { username: Type.String({ minLength: 1, maxLength: 128 }), passwordHash: Type.String({ pattern: "^scrypt\\$[A-Za-z0-9+/=]{16,}\\$[A-Za-z0-9+/=]{40,}$" }) },
          { additionalProperties: false },
        ),
        { maxItems: 10_000 },
      ),
    ),
    /** External broker. Exclusive with `listen`. */
    url: Type.Optional(Type.String({ pattern: "^(mqtts?|wss?)://[^\\s]+$" })),
    prefix: Type.String({ pattern: "^[^#+\\s/]+(/[^#+\\s/]+)*$", default: "blockkit" }),
    username: Type.Optional(Type.String()),
    password: Type.Optional(Type.String()),
    clientId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    tls: Type.Optional(
      Type.Object(
        {
          /** Paths of PEM files. */
          ca: Type.Optional(Type.String({ minLength: 1 })),
          cert: Type.Optional(Type.String({ minLength: 1 })),
          key: Type.Optional(Type.String({ minLength: 1 })),
          rejectUnauthorized: Type.Boolean({ default: true }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const CameraConfig = Type.Object(
  {
    /** Port G of the camera device (D 1004). Default `0`. */
    G: Type.String({ pattern: PORT_PATTERN, default: "0" }),
    /** Exactly one source: an HTTP snapshot URL, a command writing a JPEG to stdout, or a file. */
    url: Type.Optional(Url),
    command: Type.Optional(Type.String({ minLength: 1 })),
    file: Type.Optional(Type.String({ minLength: 1 })),
    timeoutMs: Type.Integer({ minimum: 100, maximum: 120_000, default: 10_000 }),
  },
  { additionalProperties: false },
);

export const GatewayConfig = Type.Object(
  {
    /** The server's root (`http://host:8000`) or REST root (`…/rest/v0`). */
    server: Url,
    /** `{stream_url}`; default: the server's host with port + 1 (the server's default). */
    stream: Type.Optional(Url),
    nodeId: Type.String({ pattern: NODE_ID_PATTERN }),
    /** A user access token for the direct activation flow, used once when no token is stored. */
    userToken: Type.Optional(Type.String({ minLength: 8 })),
    stateDir: Type.String({ minLength: 1, default: "./gateway-state" }),
    serial: Type.Array(SerialConfig, { default: [], maxItems: 8 }),
    mqtt: Type.Optional(MqttConfig),
    camera: Type.Optional(CameraConfig),
    outbox: Type.Object(
      {
        maxRows: Type.Integer({ minimum: 100, default: 1_000_000 }),
        maxBytes: Type.Integer({ minimum: 65_536, default: 256 * 2 ** 20 }),
        /** Free space kept on the state dir's filesystem; readings are refused below it. */
        reserveBytes: Type.Integer({ minimum: 0, default: 16 * 2 ** 20 }),
        maxAgeDays: Type.Number({ exclusiveMinimum: 0, default: 30 }),
        sync: Type.Union([Type.Literal("full"), Type.Literal("normal")], { default: "full" }),
        batchSize: Type.Integer({ minimum: 1, maximum: 1000, default: 1000 }),
        /** Most readings per second while replaying a backlog; 0 = unpaced. */
        ratePerSecond: Type.Integer({ minimum: 0, default: 20_000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    health: Type.Object(
      {
        /** Port of /healthz and /metrics; 0 picks a free one. */
        port: Type.Integer({ minimum: 0, maximum: 65535, default: 9464 }),
        host: Type.String({ default: "127.0.0.1" }),
        enabled: Type.Boolean({ default: true }),
      },
      { additionalProperties: false, default: {} },
    ),
    logLevel: Type.Union(
      ["fatal", "error", "warn", "info", "debug", "trace", "silent"].map((l) => Type.Literal(l)),
      { default: "info" },
    ),
    /** Append every frame received from hardware to this file as JSON lines. */
    record: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

export type GatewayConfig = Static<typeof GatewayConfig>;
export type SerialConfig = Static<typeof SerialConfig>;
export type MqttConfig = Static<typeof MqttConfig>;
export type CameraConfig = Static<typeof CameraConfig>;
