/** Parsers for the API commands' arguments: each names the value it refused and what it expected. */
import { readFile } from "node:fs/promises";
import { InvalidArgumentError } from "commander";
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

/** A moment: epoch milliseconds, or an ISO 8601 date/time (`2026-01-31`, `2026-01-31T12:00:00Z`). */
export function moment(value: string): number {
  if (/^[0-9]{1,15}$/.test(value)) return Number(value);
  const ms = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw new InvalidArgumentError(`"${value}" is not a time (epoch ms or ISO 8601, e.g. 2026-01-31T12:00:00Z)`);
  return ms;
}

export function oneOf<T extends string>(values: readonly T[]): (value: string) => T {
  return (value) => {
    if (!(values as readonly string[]).includes(value)) throw new InvalidArgumentError(`"${value}" is not one of ${values.join(", ")}`);
    return value as T;
  };
}

/** Reads a JSON object document from FILE, or from standard input when FILE is `-`. */
export async function readJsonObject(io: CliIO, file: string): Promise<Record<string, unknown>> {
  const where = file === "-" ? "standard input" : file;
  let text: string;
  try {
    text = file === "-" ? await io.readStdin() : await readFile(file, "utf8");
  } catch (err) {
    throw new CliError(`cannot read ${where}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CliError(`${where} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw new CliError(`${where} is not a JSON object`);
  return doc as Record<string, unknown>;
}
