/**
 * JSON Schemas (TypeBox) of the service's answers, for the API reference (docs/openapi.json). The
 * server does not serialise with them (a fastify `response` schema would drop unknown fields and
 * coerce types, changing the contract): they describe, and a test checks real answers against them.
 * The TypeScript shapes the clients use are in api-types.ts; a test keeps the two in step.
 */
import { type TSchema, Type } from "@sinclair/typebox";
import { SUBDEVICE_CATEGORIES, SUBDEVICE_TYPES } from "./automation.js";

const Flag = Type.Union([Type.Literal(0), Type.Literal(1)]);
const EpochMs = (description: string) => Type.Integer({ description: `${description}, epoch milliseconds` });
const Value = Type.Union([Type.String(), Type.Number()]);

/** The envelope of a success, with `data` when given (absent in some answers when `optional`). */
export function okEnvelope(data?: TSchema, optional = false) {
  const base = { result: Type.Literal(1), error: Type.Null(), id: Type.Literal(0) };
  if (data === undefined) return Type.Object(base);
  return Type.Object({ ...base, data: optional ? Type.Optional(data) : data });
}

/** Every refusal: `result` 0 and `error` a sentence naming the field or resource at fault. */
export const ErrorEnvelope = Type.Object(
  {
    result: Type.Literal(0),
    error: Type.String({ description: "what went wrong, naming the field or resource at fault" }),
    id: Type.Literal(0),
  },
  { $id: "ErrorEnvelope", title: "ErrorEnvelope", description: "The envelope of every refusal (HTTP status 4xx or 5xx)." },
);

export const SubDevice = Type.Object(
  {
    category: Type.Union(SUBDEVICE_CATEGORIES.map((c) => Type.Literal(c))),
    type: Type.Union(SUBDEVICE_TYPES.map((c) => Type.Literal(c))),
    shortName: Type.String(),
    data: Type.String(),
    url: Type.Optional(Type.String({ description: "webhook actuators only" })),
  },
  { description: "A sub-device as listed in its device's `subDevices` (never its tickle token)." },
);

export const Device = Type.Object(
  {
    guid: Type.Optional(Type.String({ description: "in the single-device answer; in the list the GUID is the key" })),
    vid: Type.String({ description: "vendor id V" }),
    did: Type.String({ description: "device id D" }),
    gid: Type.String({ description: "port G" }),
    node: Type.String({ description: "node id of the block that reports the device" }),
    device_type: Type.String({ description: "from the device-type table, e.g. temperature, relay, rf433; `unknown` for an id not in it" }),
    default_name: Type.String(),
    shortName: Type.String({ description: "the user's title (PUT /device/:guid)" }),
    css_class: Type.String(),
    is_sensor: Flag,
    is_actuator: Flag,
    is_silent: Flag,
    has_time_series: Flag,
    has_subdevice_count: Type.Integer(),
    meta: Type.Record(Type.String(), Type.Unknown(), {
      description: "config events: `plugged` (false after UNPLUG, true after PLUGIN) and `config.<type>`; a File Host's `target`",
    }),
    subDevices: Type.Record(Type.String(), SubDevice, { description: "keyed by sub-device id" }),
    last_data: Type.Object(
      {
        DA: Type.Union([Value, Type.Null()], { description: "a number for numeric device types, else a string; null before the first reading" }),
        timestamp: Type.Union([Type.Integer(), Type.Null()], { description: "epoch milliseconds; null before the first reading" }),
      },
    ),
  },
  { additionalProperties: true },
);

export const DeviceMap = Type.Record(Type.String(), Device, { description: "your devices, keyed by GUID" });

export const Heartbeat = Type.Object({
  G: Type.String(),
  V: Type.Number(),
  D: Type.Number(),
  DA: Type.Union([Value, Type.Null()]),
  GUID: Type.String(),
  timestamp: Type.Union([Type.Integer(), Type.Null()], { description: "epoch milliseconds" }),
  node: Type.String(),
});

export const DataPoints = Type.Array(
  Type.Object({
    t: Type.String({ description: "`YYYY-MM-DDTHH:MM:SS.mmm+0000`: the reading's time, or the bucket's start (UTC)" }),
    v: Value,
  }),
  { description: "time order; with an interval, one point per non-empty bucket" },
);

export const Callback = Type.Object({
  url: Type.String(),
  secret: Type.String({ description: "the key of the deliveries' HMAC-SHA256 signature (header X-Blockkit-Signature)" }),
});

/** The body POSTed to a callback URL (an OpenAPI webhook). */
export const CallbackDelivery = Type.Object({
  GUID: Type.String(),
  G: Type.String(),
  V: Type.Number(),
  D: Type.Number(),
  DA: Value,
  timestamp: EpochMs("when the reading was taken"),
  node: Type.String(),
});

export const SubDeviceCreated = Type.Object({
  id: Type.String({ description: "the new sub-device's id (`s` and 7 base-36 characters)" }),
  token: Type.Optional(Type.String({ description: "webhook sensors only: the secret of the tickle path, shown once" })),
  secret: Type.Optional(Type.String({ description: "webhook actuators only: the key of the HMAC-SHA256 signature of the service's calls to its url" })),
});

export const SubDeviceTokenOnly = Type.Object({ token: Type.String({ description: "the new tickle token of a sub-device that became a webhook sensor, shown once" }) });

export const Block = Type.Object({
  date_created: EpochMs("claimed"),
  last_active: EpochMs("the block's last request with its token (recorded at most every 10 s)"),
  short_name: Type.String(),
});

export const BlockMap = Type.Record(Type.String(), Block, { description: "your blocks, keyed by node id" });

export const AwaitingBlocks = Type.Array(
  Type.Object({ nodeid: Type.String(), since: EpochMs("its latest activation request") }),
);

export const BlockToken = Type.Object({ token: Type.String({ description: "the block token: send it in X-Service-Token" }) });

export const Commands = Type.Object({
  DEVICE: Type.Array(
    Type.Object({ G: Type.String(), V: Type.Number(), D: Type.Number(), DA: Type.String(), GUID: Type.Optional(Type.String()) }),
    { description: "the queued commands, oldest first; empty when the hold ended with none" },
  ),
});

const Handler = Type.Object({ handler: Type.String(), params: Type.Record(Type.String(), Type.Unknown()) });

export const Rule = Type.Object(
  {
    rid: Type.Number(),
    shortName: Type.String(),
    preconditions: Type.Array(Handler),
    actions: Type.Array(Handler),
    timeout: Type.Number({ description: "seconds; 0 when unset" }),
    store: Type.Object({}),
    suspended: Type.Boolean(),
    history: Type.Optional(
      Type.Array(
        Type.Object({
          timestamp: EpochMs("when the rule fired"),
          ok: Type.Boolean(),
          steps: Type.Array(
            Type.Object({
              handler: Type.String(),
              ok: Type.Boolean(),
              result: Type.Optional(Type.String()),
              error: Type.Optional(Type.String()),
              ms: Type.Number(),
            }),
          ),
          error: Type.Union([Type.String(), Type.Null()]),
        }),
        { description: "GET /rule/:rid only: the rule's recent runs, newest first" },
      ),
    ),
  },
);

export const RuleCreated = Type.Object({ rid: Type.String({ description: "the new rule's id (a string here, as the spec shows; a number elsewhere)" }) });

export const User = Type.Object({
  name: Type.String(),
  credential: Type.String({ description: "`user` (personal token), `oauth` (an application's token) or `session` (the pages' cookie)" }),
  version: Type.String({ description: "the server's version" }),
});

export const ServiceDevice = Type.Object({ guid: Type.String({ description: "the GUID of your service device" }) });

export const OAuthToken = Type.Object({
  access_token: Type.String({ description: "send it as the query parameter access_token" }),
  token_type: Type.Literal("bearer"),
  scope: Type.Literal("all"),
});

export const Health = Type.Object({
  ok: Type.Boolean(),
  status: Type.Union([Type.Literal("ok"), Type.Literal("degraded")]),
  store: Type.Object({ ok: Type.Boolean() }, { additionalProperties: true, description: "the store's state: why it cannot write, since when" }),
  heldPolls: Type.Optional(Type.Integer({ description: "API listener: command long-polls held now" })),
  ingestQueue: Type.Optional(Type.Integer({ description: "API listener: block events waiting for their commit" })),
});
