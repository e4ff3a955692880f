/** Parsers for the API commands' arguments: each names the value it refused and what it expected. */
import { readFile } from "node:fs/promises";
import { InvalidArgumentError } from "commander";
import { parse as parseYaml } from "yaml";
import { parseGuid, isNodeId } from "../../protocol/guid.js";
import { FOLD_FNS, type FoldFn, parseInterval } from "../../protocol/history.js";
import { CliError, type CliIO } from "./context.js";

export function guid(value: string): string {
  if (!parseGuid(value)) throw new InvalidArgumentError(`"${value}" is not a device GUID (NODEID_G_V_D, e.g. ABCDEF123456_0_0_1002)`);
  return value;
}

export function nodeId(value: string): string {
  if (!isNodeId(value)) throw new InvalidArgumentError(`"${value}" is not a node id (12-64 letters and digits)`);
  return value;
}

export function ruleId(value: string): string {
  if (!/^[0-9]{1,15}$/.test(value)) throw new InvalidArgumentError(`"${value}" is not a rule id (a whole number)`);
  return value;
}

export function subdeviceId(value: string): string {
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(value)) throw new InvalidArgumentError(`"${value}" is not a sub-device id (1-64 letters, digits, _ . -)`);
  return value;
}

export function interval(value: string): string {
  if (!parseInterval(value)) throw new InvalidArgumentError(`"${value}" is not an interval (<number><min|hour|day|month|year>, e.g. 1hour)`);
  return value;
}

export function foldFn(value: string): FoldFn {
  if (!(FOLD_FNS as readonly string[]).includes(value)) throw new InvalidArgumentError(`"${value}" is not one of ${FOLD_FNS.join(", ")}`);
  return value as FoldFn;
}

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * A moment: `now`, a time relative to now (`-30m`, `-24h`, `-7d`; units s, m, h, d, w), epoch
 * milliseconds, or an ISO 8601 date/time (`2026-01-31`, `2026-01-31T12:00:00Z`).
 */
export function moment(value: string, now: () => number = Date.now): number {
  if (value === "now") return now();
  const rel = /^-([0-9]{1,9})([smhdw])$/.exec(value);
  if (rel) return now() - Number(rel[1]) * (UNIT_MS[rel[2] ?? ""] ?? 0);
  if (/^[0-9]{1,15}$/.test(value)) return Number(value);
  const ms = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw new InvalidArgumentError(`"${value}" is not a time (now, -30m, -24h, -7d, epoch ms or ISO 8601 like 2026-01-31T12:00:00Z)`);
  return ms;
}

export function oneOf<T extends string>(values: readonly T[]): (value: string) => T {
  return (value) => {
    if (!(values as readonly string[]).includes(value)) throw new InvalidArgumentError(`"${value}" is not one of ${values.join(", ")}`);
    return value as T;
  };
}

/** Reads FILE, or standard input when FILE is `-`; an unreadable file is a usage error naming it. */
async function readText(io: CliIO, file: string): Promise<string> {
  try {
    return file === "-" ? await io.readStdin() : await readFile(file, "utf8");
  } catch (err) {
    throw new CliError(`cannot read ${file === "-" ? "standard input" : file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

function mustBeObject(doc: unknown, where: string, kind: string): Record<string, unknown> {
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw new CliError(`${where} is not a ${kind} object`);
  return doc as Record<string, unknown>;
}

/** Reads a JSON object document from FILE, or from standard input when FILE is `-`. */
export async function readJsonObject(io: CliIO, file: string): Promise<Record<string, unknown>> {
  const where = file === "-" ? "standard input" : file;
  const text = await readText(io, file);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CliError(`${where} is not valid JSON: ${(err as Error).message}`);
  }
  return mustBeObject(doc, where, "JSON");
}

/**
 * Reads an object document in JSON or YAML from FILE or `-`: JSON when the file is named `.json` or
 * the text starts with `{` or `[`, YAML otherwise (a YAML error names the line).
 */
export async function readDocument(io: CliIO, file: string): Promise<Record<string, unknown>> {
  const where = file === "-" ? "standard input" : file;
  const text = await readText(io, file);
  if (/\.json$/i.test(file) || /^\s*[[{]/.test(text)) {
    try {
      return mustBeObject(JSON.parse(text), where, "JSON");
    } catch (err) {
      if (err instanceof CliError) throw err;
      throw new CliError(`${where} is not valid JSON: ${(err as Error).message}`);
    }
  }
  let doc: unknown;
  try {
    doc = parseYaml(text, { prettyErrors: true });
  } catch (err) {
    throw new CliError(`${where} is not valid YAML: ${((err as Error).message.split("\n")[0] ?? "").trim()}`);
  }
  return mustBeObject(doc, where, "YAML");
}
