/**
 * Loading a scenario: YAML or JSON text -> defaults applied -> validated, with every problem listed
 * as `path: message` -> device types resolved -> frozen. Also builds a scenario from flags.
 */
import { isNodeId } from "../../protocol/guid.js";
import { readFileSync } from "node:fs";
import { ValueErrorType } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";
import { parse as parseYaml } from "yaml";
import { D as KNOWN_D, deviceType } from "../../protocol/device-types.js";
import { defaultGenerator } from "./defaults.js";
import { type ChaosSpec, type DeviceSpec, GENERATORS, type GeneratorSpec, type Scenario, ScenarioSchema } from "./schema.js";
import { type Threshold, parseThreshold } from "./thresholds.js";

/** A device of the scenario with its (V, D) resolved. */
export interface ResolvedDevice extends DeviceSpec {
  V: number;
  D: number;
  G: string;
}

export interface LoadedScenario extends Omit<Scenario, "devices" | "thresholds"> {
  devices: ResolvedDevice[];
  thresholds: Threshold[];
  chaos: ChaosSpec[];
}

export class ScenarioError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid scenario:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    this.name = "ScenarioError";
  }
}

/** Preferred device id of each device-type name (the table has several ids for some names). */
const TYPE_D: Record<string, number> = {
  temperature: 9,
  humidity: 8,
  button: KNOWN_D.button,
  light: 6,
  PIR: 7,
  motion: 7,
  distance: 10,
  sound: 12,
  rf433: KNOWN_D.rf433,
  relay: KNOWN_D.relay,
  rgbled: 1000,
  camera: KNOWN_D.camera,
  display: 7000,
  sandbox: KNOWN_D.sandbox,
};

function pointer(path: string): string {
  return path === "" ? "(root)" : path.replace(/^\//, "").replace(/\//g, ".");
}

/** What a schema of the scenario asks for, in words: "a number", "one of drop, pause, burst". */
function expected(schema: { type?: unknown; anyOf?: { const?: unknown }[] }): string | null {
  const choices = schema.anyOf?.map((s) => s.const);
  if (choices && choices.length > 0 && choices.every((c) => typeof c === "string" || typeof c === "number")) return `one of ${choices.join(", ")}`;
  const type = { number: "a number", integer: "a whole number", string: "a string", boolean: "true or false", array: "a list", object: "a mapping" }[String(schema.type)];
  return type ?? null;
}

/**
 * The schema's problems, one a path: TypeBox reports a missing property twice (required, then the
 * type of undefined) and a value outside a set of words as "Expected union value", which names
 * neither the words nor the value.
 */
function schemaProblems(schema: Parameters<typeof Value.Errors>[0], value: unknown, prefix: string): string[] {
  const byPath = new Map<string, string>();
  for (const e of Value.Errors(schema, value)) {
    const path = pointer(prefix + e.path);
    if (byPath.has(path)) continue;
    const want = expected(e.schema as Parameters<typeof expected>[0]);
    let message = e.message;
    if (e.type === ValueErrorType.ObjectRequiredProperty) message = want ? `required, ${want}` : "required";
    else if (e.type === ValueErrorType.Union && want?.startsWith("one of ")) message = `must be ${want} (got ${JSON.stringify(e.value)})`;
    byPath.set(path, `${path}: ${message}`);
  }
  return [...byPath.values()];
}

function resolveDevice(d: DeviceSpec, i: number, problems: string[]): ResolvedDevice | null {
  const at = `devices.${i}`;
  const V = d.V ?? 0;
  const D = d.D ?? TYPE_D[d.type];
  if (D === undefined) {
    problems.push(`${at}.type: unknown device type "${d.type}"; give D, or one of ${Object.keys(TYPE_D).join(", ")}`);
    return null;
  }
  const t = deviceType(V, D);
  const raw = (d as { generator?: unknown }).generator ?? defaultGenerator(t.device_type, D);
  if (raw === null || typeof raw !== "object" || typeof (raw as { kind?: unknown }).kind !== "string") {
    problems.push(`${at}.generator: must be an object with a kind (${Object.keys(GENERATORS).join(", ")})`);
    return null;
  }
  const schema = GENERATORS[(raw as { kind: string }).kind];
  if (!schema) {
    problems.push(`${at}.generator.kind: unknown generator "${(raw as { kind: string }).kind}"; one of ${Object.keys(GENERATORS).join(", ")}`);
    return null;
  }
  const generator = Value.Default(schema, structuredClone(raw)) as GeneratorSpec;
  const before = problems.length;
  problems.push(...schemaProblems(schema, generator, `/${at.replace(".", "/")}/generator`));
  if (generator.kind === "camera" && D !== KNOWN_D.camera) problems.push(`${at}.generator: a camera generator needs D ${KNOWN_D.camera}`);
  if (generator.kind === "actuator" && !t.is_actuator) problems.push(`${at}.generator: device type ${t.device_type} (D ${D}) is not an actuator`);
  if (generator.kind === "sine" && generator.min > generator.max) problems.push(`${at}.generator.min: must not exceed max`);
  if (generator.kind === "walk" && generator.min > generator.max) problems.push(`${at}.generator.min: must not exceed max`);
  if (problems.length > before) return null;
  return { ...d, V, D, G: d.G ?? String(i + 1), generator };
}

/** Validates a parsed document (from YAML, JSON or flags) into a scenario; throws ScenarioError. */
export function validateScenario(doc: unknown): LoadedScenario {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) throw new ScenarioError(["(root): must be an object"]);
  const withDefaults = Value.Default(ScenarioSchema, structuredClone(doc)) as Scenario;
  // Every problem at once: the checks below run on whatever parts are well-formed, so a file with
  // a schema error and an unknown device type shows both (not the second after the first is fixed).
  const problems = schemaProblems(ScenarioSchema, withDefaults, "");
  const devices: ResolvedDevice[] = [];
  // Each resolved device's index in the file, for the paths of the checks below: entries refused
  // above are not in `devices`, so its own index would name the wrong entry.
  const at: number[] = [];
  const specs = Array.isArray(withDefaults.devices) ? withDefaults.devices : [];
  specs.forEach((d, i) => {
    if (d === null || typeof d !== "object" || typeof d.type !== "string") return;
    const r = resolveDevice(d, i, problems);
    if (r) {
      devices.push(r);
      at.push(i);
    }
  });
  const ports = new Set<string>();
  devices.forEach((d, j) => {
    const i = at[j] as number;
    const count = Number.isInteger(d.count) && d.count > 0 ? Math.min(d.count, 1000) : 1;
    for (let k = 0; k < count; k++) {
      const key = `${portAt(d.G, k)}_${d.V}_${d.D}`;
      if (ports.has(key)) problems.push(`devices.${i}.G: port ${portAt(d.G, k)} with V ${d.V} D ${d.D} is used twice`);
      ports.add(key);
    }
  });
  const b = (withDefaults.blocks ?? {}) as Partial<Scenario["blocks"]>;
  const count = typeof b.count === "number" ? b.count : 1;
  const seed = typeof withDefaults.seed === "number" ? withDefaults.seed : 1;
  if (typeof b.two_legged === "number" && b.two_legged > count) problems.push(`blocks.two_legged: ${b.two_legged} is more than blocks.count (${count})`);
  if (typeof b.node_id === "string") {
    if (!/\{index(:\d+)?\}/.test(b.node_id) && count > 1) problems.push("blocks.node_id: needs {index} when count > 1");
    else {
      const sample = nodeIdFor(b.node_id, seed, Math.max(0, count - 1));
      if (!isNodeId(sample)) problems.push(`blocks.node_id: gives "${sample}", not 12-64 letters and digits`);
    }
  }
  const chaos = Array.isArray(withDefaults.chaos) ? withDefaults.chaos : [];
  chaos.forEach((c, i) => {
    if (c === null || typeof c !== "object") return;
    if (typeof c.blocks === "number" && c.blocks > count) problems.push(`chaos.${i}.blocks: ${c.blocks} is more than blocks.count (${count})`);
    if (typeof c.at_s === "number" && typeof withDefaults.duration_s === "number" && c.at_s > withDefaults.duration_s) {
      problems.push(`chaos.${i}.at_s: after the end of the run (duration_s ${withDefaults.duration_s})`);
    }
  });
  const thresholds: Threshold[] = [];
  (Array.isArray(withDefaults.thresholds) ? withDefaults.thresholds : []).forEach((t, i) => {
    if (typeof t !== "string") return;
    try {
      thresholds.push(parseThreshold(t));
    } catch (err) {
      problems.push(`thresholds.${i}: ${(err as Error).message}`);
    }
  });
  if (problems.length > 0) throw new ScenarioError([...new Set(problems)]);
  return Object.freeze({ ...withDefaults, devices, thresholds });
}

/** Parses YAML (a superset of JSON) text; syntax errors are reported with their line. */
export function parseScenarioText(text: string, source = "scenario"): LoadedScenario {
  let doc: unknown;
  try {
    doc = parseYaml(text, { prettyErrors: true });
  } catch (err) {
    throw new ScenarioError([`${source}: ${(err as Error).message.split("\n")[0] ?? "syntax error"}`]);
  }
  return validateScenario(doc);
}

export function loadScenarioFile(path: string): LoadedScenario {
  return parseScenarioText(readFileSync(path, "utf8"), path);
}

/** Port of the k-th device of an entry: numeric ports count up, others get a suffix. */
export function portAt(first: string, k: number): string {
  if (k === 0) return first;
  return /^\d+$/.test(first) ? String(Number(first) + k) : `${first}${k}`;
}

/** The node id of block `index` from the pattern. */
export function nodeIdFor(pattern: string, seed: number, index: number): string {
  return pattern
    .replace(/\{seed\}/g, String(seed))
    .replace(/\{index(?::(\d+))?\}/g, (_m, width: string | undefined) => String(index).padStart(Number(width ?? 0), "0"));
}
