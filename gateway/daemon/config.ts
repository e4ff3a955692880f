/**
 * Loading the configuration: the file (JSON or YAML), then BLOCKKIT_* environment variables, then
 * flags; defaults filled in; validated against the schema with every problem reported as
 * `path: message`; the result frozen. A config with any problem is refused as a whole.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Value } from "@sinclair/typebox/value";
import { GatewayConfig } from "./config-schema.js";

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid gateway configuration:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/** Overrides from the command line; undefined means "not given". */
export interface GatewayFlags {
  server?: string;
  stream?: string;
  nodeId?: string;
  userToken?: string;
  stateDir?: string;
  serial?: string;
  baud?: number;
  mqttListen?: number;
  mqttUrl?: string;
  mqttPrefix?: string;
  healthPort?: number;
  logLevel?: string;
  record?: string;
}

/** BLOCKKIT_* variable -> flag it stands for. */
export const ENV_FLAGS: Record<string, keyof GatewayFlags> = {
  BLOCKKIT_SERVER: "server",
  BLOCKKIT_STREAM: "stream",
  BLOCKKIT_NODE_ID: "nodeId",
  BLOCKKIT_USER_TOKEN: "userToken",
  BLOCKKIT_STATE_DIR: "stateDir",
  BLOCKKIT_SERIAL: "serial",
  BLOCKKIT_BAUD: "baud",
  BLOCKKIT_MQTT_LISTEN: "mqttListen",
  BLOCKKIT_MQTT_URL: "mqttUrl",
  BLOCKKIT_MQTT_PREFIX: "mqttPrefix",
  BLOCKKIT_HEALTH_PORT: "healthPort",
  BLOCKKIT_LOG_LEVEL: "logLevel",
  BLOCKKIT_RECORD: "record",
};
const NUMERIC = new Set<keyof GatewayFlags>(["baud", "mqttListen", "healthPort"]);

function readFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError([`${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`]);
  }
  let data: unknown;
  try {
    // The YAML parser is loaded only for YAML files (it costs several MB of a Pi's memory).
    data = /\.ya?ml$/i.test(file) ? (createRequire(import.meta.url)("yaml") as typeof import("yaml")).parse(text) : JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`${file}: not valid ${/\.ya?ml$/i.test(file) ? "YAML" : "JSON"}: ${(err as Error).message.split("\n")[0]}`]);
  }
  if (data === null || data === undefined) return {};
  if (typeof data !== "object" || Array.isArray(data)) throw new ConfigError([`${file}: the top level must be a mapping`]);
  return data as Record<string, unknown>;
}

function fromEnv(env: NodeJS.ProcessEnv, problems: string[]): GatewayFlags {
  const out: Record<string, unknown> = {};
  for (const [name, flag] of Object.entries(ENV_FLAGS)) {
    const v = env[name];
    if (v === undefined || v === "") continue;
    if (NUMERIC.has(flag)) {
      if (!/^\d+$/.test(v)) problems.push(`${name}: "${v}" is not a whole number`);
      else out[flag] = Number(v);
    } else out[flag] = v;
  }
  return out as GatewayFlags;
}

function apply(base: Record<string, unknown>, f: GatewayFlags): void {
  const set = (k: string, v: unknown): void => {
    if (v !== undefined) base[k] = v;
  };
  set("server", f.server);
  set("stream", f.stream);
  set("nodeId", f.nodeId);
  set("userToken", f.userToken);
  set("stateDir", f.stateDir);
  set("logLevel", f.logLevel);
  set("record", f.record);
  if (f.serial !== undefined || f.baud !== undefined) {
    const list = Array.isArray(base.serial) ? [...(base.serial as Record<string, unknown>[])] : [];
    const first = { ...(list[0] ?? {}) };
    if (f.serial !== undefined) {
      first.path = f.serial;
      delete first.match;
    }
    if (f.baud !== undefined) first.baud = f.baud;
    list[0] = first;
    base.serial = list;
  }
  if (f.mqttListen !== undefined || f.mqttUrl !== undefined || f.mqttPrefix !== undefined) {
    const m = { ...((base.mqtt as Record<string, unknown> | undefined) ?? {}) };
    if (f.mqttListen !== undefined) {
      m.listen = f.mqttListen;
      delete m.url;
    }
    if (f.mqttUrl !== undefined) {
      m.url = f.mqttUrl;
      delete m.listen;
    }
    if (f.mqttPrefix !== undefined) m.prefix = f.mqttPrefix;
    base.mqtt = m;
  }
  if (f.healthPort !== undefined) base.health = { ...((base.health as object | undefined) ?? {}), port: f.healthPort };
}

/** Builds the configuration; throws ConfigError listing every problem. */
export function loadConfig(opts: { file?: string; flags?: GatewayFlags; env?: NodeJS.ProcessEnv }): Readonly<GatewayConfig> {
  const problems: string[] = [];
  const raw: Record<string, unknown> = opts.file ? readFile(opts.file) : {};
  const envFlags = fromEnv(opts.env ?? {}, problems);
  apply(raw, envFlags);
  apply(raw, opts.flags ?? {});
  const withDefaults = Value.Default(GatewayConfig, structuredClone(raw)) as Record<string, unknown>;
  for (const e of Value.Errors(GatewayConfig, withDefaults)) {
    const path = e.path.replace(/^\//, "").replace(/\//g, ".") || "(top level)";
    problems.push(`${path}: ${e.message}${e.value !== undefined && typeof e.value !== "object" ? ` (got ${JSON.stringify(e.value)})` : ""}`);
  }
  if (problems.length === 0) {
    const c = withDefaults as GatewayConfig;
    c.serial.forEach((s, i) => {
      if (!s.path === !s.match) problems.push(`serial.${i}: give exactly one of path and match`);
    });
    if (c.mqtt && (c.mqtt.listen === undefined) === (c.mqtt.url === undefined)) {
      problems.push("mqtt: give exactly one of listen (embedded broker) and url (external broker)");
    }
    const host = c.mqtt?.listenHost ?? "127.0.0.1";
    if (c.mqtt?.listen !== undefined && !(host === "localhost" || host === "::1" || host.startsWith("127.")) && !c.mqtt.users?.length) {
      problems.push(`mqtt.listenHost: ${host} opens the embedded broker to the LAN; give mqtt.users (a user name and password hash per node) or listen on 127.0.0.1`);
    }
    if (c.camera && [c.camera.url, c.camera.command, c.camera.file].filter((x) => x !== undefined).length !== 1) {
      problems.push("camera: give exactly one of url, command and file");
    }
    const names = c.serial.map((s, i) => s.name ?? (i === 0 ? "serial" : `serial${i + 1}`));
    if (new Set(names).size !== names.length) problems.push("serial: link names must be unique");
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(withDefaults as GatewayConfig);
}

/** The REST root and the stream root from the configured server and stream URLs. */
export function serverUrls(c: GatewayConfig): { baseUrl: string; streamUrl: string } {
  const root = c.server.replace(/\/+$/, "").replace(/\/rest\/v0$/, "");
  let streamUrl = c.stream?.replace(/\/+$/, "");
  if (!streamUrl) {
    const u = new URL(root);
    const port = u.port ? Number(u.port) : u.protocol === "https:" ? 443 : 80;
    u.port = String(port + 1);
    streamUrl = u.origin;
  }
  return { baseUrl: `${root}/rest/v0`, streamUrl };
}

function deepFreeze<T>(o: T): Readonly<T> {
  if (o && typeof o === "object") {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
