/**
 * Wire schemas (TypeBox / JSON Schema) of the block protocol and the user API bodies.
 * The server validates with them; the gateway, simulator and CLI import the types.
 */
import { Kind, type Static, type TSchema, Type, TypeRegistry } from "@sinclair/typebox";
import { NODE_ID_PATTERN, PORT_PATTERN } from "./guid.js";

/** Largest DA accepted, in characters. */
export const MAX_DA_LENGTH = 4096;
/** Timestamps (epoch ms) must fall in [2000-01-01, 2200-01-01). */
export const MIN_TIMESTAMP = 946_684_800_000;
export const MAX_TIMESTAMP = 7_258_118_400_000;

const Port = Type.Union([Type.String({ pattern: PORT_PATTERN }), Type.Integer({ minimum: 0, maximum: 2 ** 31 })], {
  description: "port G: alphanumeric; a number is accepted and stored as a string",
});
/** Largest V and D. */
export const MAX_ID = 999_999_999;

/**
 * Schema keyword (registered on the server's validator, server/http/schema-keywords.ts) for a
 * non-negative integer sent as a JSON number or as a string of decimal digits. A keyword of its own
 * rather than `type: "integer"`: the validator coerces types, and its coercion takes "Infinity",
 * "0x10", " 7" and "1e3" as numbers (and lets a coerced Infinity past `maximum`).
 */
export const WIRE_INTEGER = "x-wire-integer";
/** The same for a finite non-negative number: a JSON number or a decimal string ("30", "2.5"). */
export const WIRE_NUMBER = "x-wire-number";

/** Whether `x` is a wire integer in [0, maximum]. */
export function isWireInteger(x: unknown, maximum: number): boolean {
  if (typeof x === "number") return Number.isInteger(x) && x >= 0 && x <= maximum;
  return typeof x === "string" && /^[0-9]{1,15}$/.test(x) && Number(x) <= maximum;
}

/** Whether `x` is a wire number in [0, maximum]. */
export function isWireNumber(x: unknown, maximum: number): boolean {
  if (typeof x === "number") return Number.isFinite(x) && x >= 0 && x <= maximum;
  return typeof x === "string" && /^[0-9]{1,15}(\.[0-9]{1,15})?$/.test(x) && Number(x) <= maximum;
}

// The same checks for TypeBox's own checkers (Value.Check, TypeCompiler), which read the schema's
// Kind: so these schemas check alike on the server (ajv, by keyword) and anywhere else.
type Bounded = Record<string, { maximum: number }>;
TypeRegistry.Set<Bounded>("WireInteger", (schema, value) => isWireInteger(value, (schema[WIRE_INTEGER] as { maximum: number }).maximum));
TypeRegistry.Set<Bounded>("WireNumber", (schema, value) => isWireNumber(value, (schema[WIRE_NUMBER] as { maximum: number }).maximum));

/** A non-negative integer up to `maximum` on the wire: a JSON number or a string of digits (`Number()` it). */
export function wireInteger(maximum: number, description: string) {
  return Type.Unsafe<number | string>({ [Kind]: "WireInteger", [WIRE_INTEGER]: { maximum }, description });
}

/** A finite non-negative number up to `maximum` on the wire: a JSON number or a decimal string. */
export function wireNumber(maximum: number, description: string) {
  return Type.Unsafe<number | string>({ [Kind]: "WireNumber", [WIRE_NUMBER]: { maximum }, description });
}

/** A V or D as the server validates it. */
const WireId = wireInteger(MAX_ID, `a non-negative integer up to ${MAX_ID}: a JSON number or a string of digits`);
/** The same, as a JSON number only: the fast lane's strict check (server/http/fast-ingest.ts). */
const StrictId = Type.Integer({ minimum: 0, maximum: MAX_ID });
const DA = Type.Union([Type.String({ maxLength: MAX_DA_LENGTH }), Type.Number()]);

function eventSchemas<T extends TSchema>(Id: T) {
  const common = {
    G: Port,
    V: Id,
    D: Id,
    /** Optional reading time in epoch milliseconds (gateways replaying an outbox send it). */
    TIMESTAMP: Type.Optional(Type.Integer({ minimum: MIN_TIMESTAMP, maximum: MAX_TIMESTAMP })),
    /** Optional idempotency key: a reading with a key the server has seen for this node is acknowledged, not stored again. */
    KEY: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    GUID: Type.Optional(Type.String({ maxLength: 256 })),
    name: Type.Optional(Type.String({ maxLength: 256 })),
  };
  const DataEvent = Type.Object({ ...common, DA }, { additionalProperties: true });
  return {
    DataEvent,
    HeartbeatBody: Type.Array(DataEvent, { minItems: 1, maxItems: 1000 }),
    ConfigEvent: Type.Object({ ...common, type: Type.String({ minLength: 1, maxLength: 256 }), DA: Type.Optional(DA) }, { additionalProperties: true }),
  };
}

const wire = eventSchemas(WireId);
export const DataEvent = wire.DataEvent;
export type DataEvent = Static<typeof DataEvent>;
export const HeartbeatBody = wire.HeartbeatBody;
export type HeartbeatBody = Static<typeof HeartbeatBody>;
export const ConfigEvent = wire.ConfigEvent;
export type ConfigEvent = Static<typeof ConfigEvent>;

/**
 * The block event schemas with V and D as JSON numbers only: a strict subset of the wire schemas,
 * checked without the server's validator (and its coercion) by the fast lane.
 */
export const StrictEvents = eventSchemas(StrictId);

/** One command as delivered on the long-poll. */
export interface Command {
  G: string;
  V: number;
  D: number;
  DA: string;
  GUID: string;
}
export interface CommandsResponse {
  DEVICE: Command[];
}

export const NodeIdParam = Type.Object({ nodeId: Type.String({ pattern: NODE_ID_PATTERN }) });
export const GuidParam = Type.Object({ guid: Type.String({ minLength: 1, maxLength: 256 }) });

export const DevicePut = Type.Object(
  {
    DA: Type.Optional(DA),
    shortName: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  },
  { additionalProperties: true },
);
export type DevicePut = Static<typeof DevicePut>;

export const ClaimBody = Type.Object({ nodeid: Type.String({ pattern: NODE_ID_PATTERN }) }, { additionalProperties: true });

export const CallbackBody = Type.Object(
  { url: Type.String({ minLength: 1, maxLength: 2048, pattern: "^https?://" }) },
  { additionalProperties: true },
);

export const HistoryQuery = Type.Object(
  {
    from: Type.Optional(Type.Number({ minimum: 0, maximum: MAX_TIMESTAMP })),
    to: Type.Optional(Type.Number({ minimum: 0, maximum: MAX_TIMESTAMP })),
    interval: Type.Optional(Type.String({ pattern: "^[0-9]{1,6}(min|hour|day|month|year)$" })),
    fn: Type.Optional(Type.Union(["mean", "sum", "min", "max", "stddev", "ss", "count"].map((f) => Type.Literal(f)))),
  },
  { additionalProperties: true },
);
export type HistoryQuery = Static<typeof HistoryQuery>;

/** DA as the wire string: numbers become their decimal text. */
export function daText(da: string | number): string {
  return typeof da === "number" ? String(da) : da;
}
