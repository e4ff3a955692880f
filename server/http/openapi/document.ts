/**
 * The document-level parts of the API reference: its description, default addresses, security
 * schemes and webhooks, and the rewrite of the server's own wire-number keywords.
 */
import { CallbackDelivery } from "../../../protocol/responses.js";
import { WIRE_INTEGER, WIRE_NUMBER } from "../../../protocol/payloads.js";
import { SESSION_COOKIE } from "../../services/accounts/sessions.js";
import { CSRF_HEADER } from "../session-auth.js";

/** The addresses the committed document names (the server's defaults). */
export const DEFAULT_AUTH_URL = "http://127.0.0.1:8000";
export const DEFAULT_STREAM_URL = "http://127.0.0.1:8001";

export const SECURITY_SCHEMES = {
  user_access_token: {
    type: "apiKey",
    in: "query",
    name: "user_access_token",
    description: "Your personal access token (settings page, or printed by `blockkit users add`): full access to your own account.",
  },
  access_token: {
    type: "apiKey",
    in: "query",
    name: "access_token",
    description:
      "An OAuth 2 access token: how a third-party application reaches a user's data. Obtained with the authorization code grant: " +
      "GET /oauth/authorize, then POST /oauth/access_token. Lasts until the user revokes the grant.",
  },
  session: {
    type: "apiKey",
    in: "cookie",
    name: SESSION_COOKIE,
    description: `The pages' session cookie (after signing in at /auth/login). Counts only with the page's CSRF token in the ${CSRF_HEADER} header (or, for the live stream, a handshake from this server's own origin).`,
  },
  block_token: {
    type: "apiKey",
    in: "header",
    name: "X-Service-Token",
    description: "A block token (block activation), or the user's virtual block token (settings page), on block-level calls.",
  },
  ninja_token: {
    type: "apiKey",
    in: "header",
    name: "X-Ninja-Token",
    description: "The original platform's name for X-Service-Token, sent by its unmodified clients. X-Service-Token wins when both are given.",
  },
  metrics_token: { type: "http", scheme: "bearer", description: "The server's metrics token (`--metrics-token`), when one is configured." },
};

/** What the service sends to the callback URLs users register (OpenAPI 3.1 webhooks). */
export const WEBHOOKS = {
  callbackDelivery: {
    post: {
      tags: ["Callbacks"],
      summary: "A reading, POSTed to a device's callback URL",
      description:
        "Sent within a second of each reading of the device (data and heartbeat events), in per-device order. Headers: " +
        "`X-Blockkit-Signature: sha256=<hex HMAC-SHA256 of the raw body, keyed with the callback's secret>` and " +
        "`X-Blockkit-Delivery: <id>` (the same on each retry of a delivery). Any 2xx acknowledges it; anything else (or no " +
        "answer within the timeout) is retried with backoff, 7 tries over about a minute, then dropped. DELETE on the " +
        "callback stops deliveries at once.",
      requestBody: { required: true, content: { "application/json": { schema: JSON.parse(JSON.stringify(CallbackDelivery)) as unknown } } },
      responses: { "2XX": { description: "Delivered." }, default: { description: "Not delivered: retried later." } },
    },
  },
};

export const INFO_DESCRIPTION = `The blockkit service API: devices, sub-devices, callbacks, blocks and their events, rules, the camera,
OAuth 2 and the live stream. REST paths are under \`/rest/v0\` (\`{base_url}\`); OAuth, the pages and this
reference are at the root (\`{auth_url}\`); camera snapshots are on the stream listener (\`{stream_url}\`,
by default the API port + 1).

**Envelope.** Every JSON answer except block activation, the commands long-poll, the OAuth token and
\`/healthz\` is \`{"result":1,"error":null,"id":0,"data":…}\`; every refusal is
\`{"result":0,"error":"<a sentence naming the field or resource>","id":0}\` with an HTTP status that
carries its class: 400 bad input, 401 no or unknown credential, 403 credential not allowed here, 404
unknown resource (another user's device or block is reported as unknown, so ids do not leak), 409
conflict, 413 body over 64 KiB (10 MiB for snapshots), 414 a path segment over 256 characters, 415 an
unsupported content type, 429 rate limited (with \`Retry-After\`, whole seconds), 503 shutting down or store unavailable, 504 a peer (a
camera's block) did not answer in time. A 500 is a bug. Requests the HTTP parser refuses (headers
over 16 KiB: 431; a request not received in time: 408) get the same envelope.

**Credentials.** User-level calls take \`user_access_token\` (or an OAuth \`access_token\`) in the query;
block-level calls take the block token in \`X-Service-Token\`. Data and heartbeat events are
acknowledged only once committed to disk.

This reference is served at \`{auth_url}/docs\` (the document itself at \`/docs/json\`) and kept in the
repository as docs/openapi.json; docs/api.md there has the decisions where the spec is silent, with
examples.`;

/**
 * The wire-number keywords (protocol/payloads.ts) are the server's own validator keywords, unknown
 * to OpenAPI tools: each gets the `anyOf` of what it accepts, so a reader and a generated client see
 * "an integer, or a string of digits".
 */
export function withWireTypes(node: unknown): unknown {
  if (Array.isArray(node)) node.forEach(withWireTypes);
  else if (node !== null && typeof node === "object") {
    const o = node as Record<string, unknown>;
    const int = o[WIRE_INTEGER] as { maximum: number } | undefined;
    const num = o[WIRE_NUMBER] as { maximum: number } | undefined;
    if (int && o.anyOf === undefined) {
      o.anyOf = [{ type: "integer", minimum: 0, maximum: int.maximum }, { type: "string", pattern: "^[0-9]{1,15}$" }];
    } else if (num && o.anyOf === undefined) {
      o.anyOf = [{ type: "number", minimum: 0, maximum: num.maximum }, { type: "string", pattern: "^[0-9]{1,15}(\\.[0-9]{1,15})?$" }];
    }
    Object.values(o).forEach(withWireTypes);
  }
  return node;
}
