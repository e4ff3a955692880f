/**
 * Wire schemas of the automation API: sub-devices, rules, callback deliveries and the camera.
 * The server validates with them; the CLI and clients import the types.
 */
import { type Static, Type } from "@sinclair/typebox";
import { wireNumber } from "./payloads.js";

export const SUBDEVICE_CATEGORIES = ["rf", "webhook", "sms"] as const;
export const SUBDEVICE_TYPES = ["actuator", "sensor"] as const;
/** Sub-device ids: `s` and 7 base-36 characters; never a binary or hex RF code. */
export const SUBDEVICE_ID_PATTERN = "^s[0-9a-z]{7}$";
export const SUBDEVICE_ID_RE = new RegExp(SUBDEVICE_ID_PATTERN);

const Category = Type.Union(SUBDEVICE_CATEGORIES.map((c) => Type.Literal(c)));
const Kind = Type.Union(SUBDEVICE_TYPES.map((c) => Type.Literal(c)));
const Url = Type.String({ minLength: 1, maxLength: 2048, pattern: "^https?://" });

export const SubDeviceCreate = Type.Object(
  {
    category: Category,
    type: Kind,
    shortName: Type.String({ minLength: 1, maxLength: 256 }),
    data: Type.Optional(Type.String({ maxLength: 4096 })),
    url: Type.Optional(Url),
  },
  { additionalProperties: true },
);
export type SubDeviceCreate = Static<typeof SubDeviceCreate>;

export const SubDeviceUpdate = Type.Partial(SubDeviceCreate, { additionalProperties: true });
export type SubDeviceUpdate = Static<typeof SubDeviceUpdate>;

export const SubDeviceParams = Type.Object({
  guid: Type.String({ minLength: 1, maxLength: 256 }),
  subdeviceId: Type.String({ minLength: 1, maxLength: 64 }),
});

export const TickleParams = Type.Object({
  deviceGuid: Type.String({ minLength: 1, maxLength: 256 }),
  subDeviceId: Type.String({ minLength: 1, maxLength: 64 }),
  token: Type.String({ minLength: 1, maxLength: 256 }),
});

export const SubDeviceDataQuery = Type.Object(
  {
    from: Type.Optional(Type.Number({ minimum: 0 })),
    to: Type.Optional(Type.Number({ minimum: 0 })),
    interval: Type.Optional(Type.String({ pattern: "^[0-9]{1,6}(min|hour|day|month|year)$" })),
  },
  { additionalProperties: true },
);

/** A sub-device as shown inside a device's `subDevices` (never its token). */
export type SubDeviceCategory = (typeof SUBDEVICE_CATEGORIES)[number];
export type SubDeviceType = (typeof SUBDEVICE_TYPES)[number];

export interface SubDeviceJson {
  category: SubDeviceCategory;
  type: SubDeviceType;
  shortName: string;
  data: string;
  url?: string;
}

export const HandlerObject = Type.Object(
  { handler: Type.String({ minLength: 1, maxLength: 64 }), params: Type.Optional(Type.Record(Type.String(), Type.Unknown())) },
  { additionalProperties: true },
);
export type HandlerObject = Static<typeof HandlerObject>;

export const RuleBody = Type.Object(
  {
    shortName: Type.String({ minLength: 1, maxLength: 256 }),
    preconditions: Type.Array(HandlerObject, { minItems: 1, maxItems: 32 }),
    actions: Type.Array(HandlerObject, { minItems: 1, maxItems: 32 }),
    /** Seconds: a finite non-negative number (or a decimal string), at most a year. */
    timeout: Type.Optional(
      wireNumber(31_536_000, "seconds, a finite non-negative number up to 31536000"),
    ),
  },
  { additionalProperties: true },
);
export type RuleBody = Static<typeof RuleBody>;

export const RidParam = Type.Object({ rid: Type.String({ pattern: "^[0-9]{1,15}$" }) });

export interface RuleHandler {
  handler: string;
  params: Record<string, unknown>;
}

export interface RuleJson {
  rid: number;
  shortName: string;
  preconditions: RuleHandler[];
  actions: RuleHandler[];
  timeout: number;
  store: Record<string, never>;
  suspended: boolean;
}

/** One entry of a rule's run history (extra field `history` of GET /rule/:rid). */
export interface RuleRunJson {
  /** When the rule fired, epoch ms. */
  timestamp: number;
  ok: boolean;
  steps: { handler: string; ok: boolean; result?: string; error?: string; ms: number }[];
  error: string | null;
}

/** The body the service POSTs to a callback URL. */
export interface CallbackPayload {
  GUID: string;
  G: string;
  V: number;
  D: number;
  DA: string | number;
  timestamp: number;
  node: string;
}

/** Header carrying `sha256=<hex HMAC-SHA256 of the raw body, keyed with the callback's secret>`. */
export const SIGNATURE_HEADER = "x-blockkit-signature";
/** Header carrying a unique id per delivery (the same on every retry of it). */
export const DELIVERY_HEADER = "x-blockkit-delivery";
