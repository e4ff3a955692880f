/**
 * Validator extensions of the server's schemas: the wire-number keywords of protocol/payloads.ts
 * and the nesting bound of JSON bodies.
 */
import { WIRE_INTEGER, WIRE_NUMBER, isWireInteger, isWireNumber } from "../../protocol/payloads.js";

/** Deepest nesting of arrays and objects accepted in a JSON body. */
export const MAX_JSON_DEPTH = 32;

interface Bound {
  maximum: number;
}

/** ajv keyword definitions (fastify's `ajv.customOptions.keywords`). */
function keyword(name: string, check: (x: unknown, maximum: number) => boolean, what: string) {
  const validate = Object.assign(
    (schema: Bound, data: unknown): boolean => {
      if (check(data, schema.maximum)) return true;
      validate.errors = [{ keyword: name, message: `must be ${what} up to ${schema.maximum}`, params: { maximum: schema.maximum } }];
      return false;
    },
    { errors: undefined as undefined | { keyword: string; message: string; params: Record<string, unknown> }[] },
  );
  return { keyword: name, schemaType: "object" as const, errors: true, validate };
}

export const SCHEMA_KEYWORDS = [
  keyword(WIRE_INTEGER, isWireInteger, "a non-negative integer (a JSON number or a string of digits)"),
  keyword(WIRE_NUMBER, isWireNumber, "a finite non-negative number"),
];

/**
 * Whether a JSON text nests arrays/objects deeper than `limit`, by a scan that skips strings:
 * refused before parsing, so that nothing later (validation, JSON.stringify when storing)
 * recurses that deep.
 */
export function nestedDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > limit) return true;
    } else if (c === 125 || c === 93) depth--;
  }
  return false;
}
