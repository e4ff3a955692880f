/**
 * @fastify/swagger's per-route transform: a route's documentation (./route-doc.ts) becomes its
 * operation in the reference. The errors every route of a kind can answer (credential, body, store)
 * are added here from the route's `config.auth` and schema; a route lists its own.
 */
import type { RouteOptions } from "fastify";
import { okEnvelope } from "../../../protocol/responses.js";
import { DEFAULT_STREAM_URL } from "./document.js";
import { type Answer, DOCS_KEY, type RouteDoc } from "./route-doc.js";

const USER_SECURITY = [{ user_access_token: [] }, { access_token: [] }, { session: [] }];
const BLOCK_SECURITY = [{ block_token: [] }, { ninja_token: [] }];

const COMMON = {
  params: "A path parameter is malformed (the message names it).",
  query: "A query parameter is malformed (the message names it).",
  body: "The body is not valid JSON, nests deeper than 32 levels, or a field is missing or malformed (the message names it).",
  413: "The body is larger than 64 KiB.",
  415: "The body's Content-Type is none the server reads: application/json, a form, or plain text (a text body where a JSON object is wanted is 400).",
  userAuth: "No credential, or one the server does not know (revoked, or another server's).",
  userTwice: "The credential is given more than once (`user_access_token` or `access_token` twice).",
  user403: "Signed in by the session cookie without the page's X-CSRF-Token header.",
  blockNode: "The node id in the path is not 12 to 64 letters and digits.",
  blockAuth: "No block token (X-Service-Token or X-Ninja-Token), or one the server does not know.",
  block403: "The block token belongs to another node than the one in the path, or the path names an account's service node (`SVC` and a user id), which no block token acts for.",
  429:
    "Too many requests with this credential (1000/s sustained, bursts of 2000 by default), or past the credential's share of " +
    "connections (256 per user, 32 per block; that connection is then closed, with Retry-After 5). Retry after Retry-After.",
  503: "The server is shutting down, or its store cannot write (disk full, database away); retry later.",
} as const;

/**
 * The header of every 429: each refusal for a rate limit or a cap says when to ask again (the
 * error handler sends ServiceError.retryAfterS; the login page sets it itself).
 */
export const RETRY_AFTER_HEADER = {
  type: "integer",
  minimum: 1,
  description:
    "Whole seconds after which the request may succeed: until the credential's bucket holds a request again (rate " +
    "limit, login attempts), 5 past a share of connections, the hold's length past the activation holds, one ping " +
    "interval past the live stream's caps.",
} as const;

/** The refusals a route answers: the common ones of its kind, then its own. */
function refusals(route: RouteOptions, d: RouteDoc): Record<number, string> {
  const schema = (route.schema ?? {}) as Record<string, unknown>;
  const auth = (route.config as { auth?: string } | undefined)?.auth;
  const out: Record<number, string[]> = {};
  const add = (status: number, text: string): void => {
    (out[status] ??= []).push(text);
  };
  if (auth === "block") add(400, COMMON.blockNode);
  if (schema.params) add(400, COMMON.params);
  if (schema.querystring) add(400, COMMON.query);
  if (schema.body) {
    add(400, COMMON.body);
    add(413, COMMON[413]);
    add(415, COMMON[415]);
  }
  if (auth === "user") {
    add(400, COMMON.userTwice);
    add(401, COMMON.userAuth);
    add(403, COMMON.user403);
    add(429, COMMON[429]);
  } else if (auth === "block") {
    add(401, COMMON.blockAuth);
    add(403, COMMON.block403);
    add(429, COMMON[429]);
  }
  add(503, COMMON[503]);
  const merged: Record<number, string> = {};
  for (const [status, texts] of Object.entries(out)) merged[Number(status)] = texts.join(" Or: ");
  for (const [status, text] of Object.entries(d.errors ?? {})) merged[Number(status)] = text;
  return merged;
}

function answerSchema(a: Answer): Record<string, unknown> {
  const headers = a.headers ? { headers: Object.fromEntries(Object.entries(a.headers).map(([k, v]) => [k, { type: "string", description: v }])) } : {};
  if (a.empty) return { description: a.description, type: "null", ...headers };
  if (a.type !== undefined) {
    const schema = a.type.startsWith("image/") ? { type: "string", format: "binary" } : { type: "string" };
    return { description: a.description, content: { [a.type]: { schema } }, ...headers };
  }
  return { ...(a.body ?? okEnvelope(a.data, a.dataOptional)), description: a.description, ...headers };
}

/** @fastify/swagger's per-route transform: the documented answers, security and servers. */
export function transform({ schema, url, route }: { schema: unknown; url: string; route: RouteOptions }): { schema: unknown; url: string } {
  const s = (schema ?? {}) as Record<string, unknown>;
  if (s.response !== undefined) {
    throw new Error(`${route.method as string} ${url}: a fastify response schema changes what the route sends (it serialises with it); document answers with doc() instead`);
  }
  const d = s[DOCS_KEY] as RouteDoc | undefined;
  if (d === undefined) return { schema: s, url };
  // A documented route is shown even when a plugin hid it (@fastify/websocket hides its routes).
  const { [DOCS_KEY]: _docs, hide: _hide, ...rest } = s;
  const response: Record<string, unknown> = {};
  for (const [status, a] of Object.entries(d.ok)) response[status] = answerSchema(a);
  for (const [status, text] of Object.entries(refusals(route, d))) {
    if (response[status] !== undefined) continue;
    response[status] = d.html ? { description: text, content: { "text/html": { schema: { type: "string" } } } } : { $ref: "ErrorEnvelope#", description: text };
  }
  const throttled = response[429] as Record<string, unknown> | undefined;
  if (throttled !== undefined) throttled.headers = { "Retry-After": RETRY_AFTER_HEADER };
  const extra: Record<string, unknown> = {};
  if (d.body && rest.body === undefined) Object.assign(extra, { body: d.body.schema, consumes: d.body.types });
  if (d.query && rest.querystring === undefined) extra.querystring = d.query;
  const auth = (route.config as { auth?: string } | undefined)?.auth;
  const security = d.security ?? (auth === "user" ? USER_SECURITY : auth === "block" ? BLOCK_SECURITY : []);
  const servers = d.streamListener ? { servers: [{ url: "{stream_url}", variables: { stream_url: { default: DEFAULT_STREAM_URL } } }] } : {};
  return { schema: { ...rest, ...extra, response, security, ...servers }, url };
}
