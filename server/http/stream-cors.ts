/**
 * CORS on the stream listener, for the API's own pages: the reference at {auth_url}/docs runs the
 * camera operations ("Try it out") from the API's origin against {stream_url}, another origin (its
 * own port). Only the API's origins are answered: the printed auth_url's and `--public-url`'s; any
 * other origin gets no CORS header, and its preflight a 403, so its pages cannot read an answer.
 *
 * No credentials (no Access-Control-Allow-Credentials): the camera operations take the user's
 * token in the query (the spec) and the block token in a header, never the session cookie, so a
 * page of the API's origin can call them only with a token it was given, and a browser that sends
 * the cookie anyway (credentials "include") is refused the answer. The session would need the
 * X-CSRF-Token header, which the preflight does not allow either.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { fail } from "../../protocol/envelope.js";
import type { Services } from "../services/index.js";

/** The camera operations' path on the stream listener, the one path that answers preflights. */
const CAMERA_PATH = "/rest/v0/camera/:guid/snapshot";
const METHODS = ["GET", "POST"];
/** Request headers a page may send: the block token (either name) and the image's type. */
const HEADERS = ["x-service-token", "x-ninja-token", "content-type"];
/** How long a browser may keep a preflight's answer, s. */
const MAX_AGE_S = 600;

/** The origins whose pages may call the stream listener: the API's, printed and public. */
export function apiOrigins(s: Services): Set<string> {
  const out = new Set<string>();
  for (const url of [s.settings.authUrl, s.settings.publicUrl]) {
    if (url) out.add(new URL(url).origin);
  }
  return out;
}

/** The request's Origin when it is one of the API's, else null (no Origin, or another one). */
function allowed(s: Services, request: FastifyRequest): string | null {
  const origin = request.headers.origin;
  return typeof origin === "string" && apiOrigins(s).has(origin) ? origin : null;
}

/** Installs the headers on every answer of the stream listener, and the preflight of the camera path. Before installAuth: a 401 carries them too. */
export function streamCors(app: FastifyInstance, s: Services): void {
  app.addHook("onRequest", function corsHeaders(request, reply, done) {
    if (request.headers.origin !== undefined) {
      // The answer depends on the Origin: a cache must not hand one origin's to another.
      void reply.header("vary", "Origin");
      const origin = allowed(s, request);
      // Retry-After of a 429 is not a header pages may read unless exposed.
      if (origin !== null) void reply.header("access-control-allow-origin", origin).header("access-control-expose-headers", "Retry-After");
    }
    done();
  });
  app.options(CAMERA_PATH, { schema: { hide: true } }, async (request, reply) => preflight(s, request, reply));
}

function preflight(s: Services, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const origin = allowed(s, request);
  const method = request.headers["access-control-request-method"];
  const asked = (request.headers["access-control-request-headers"] ?? "")
    .split(",")
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== "");
  const refuse = (why: string): FastifyReply => reply.code(403).send(fail(why));
  if (origin === null) {
    return refuse(`the camera operations answer pages of the API's own origin only (${[...apiOrigins(s)].join(", ") || "none yet"}), not ${request.headers.origin ?? "a request without Origin"}`);
  }
  if (typeof method !== "string" || !METHODS.includes(method)) return refuse(`Access-Control-Request-Method must be GET or POST, not "${method ?? ""}"`);
  const other = asked.find((h) => !HEADERS.includes(h));
  if (other !== undefined) return refuse(`the header "${other}" is not allowed: only X-Service-Token, X-Ninja-Token and Content-Type`);
  return reply
    .code(204)
    .header("access-control-allow-methods", METHODS.join(", "))
    .header("access-control-allow-headers", "X-Service-Token, X-Ninja-Token, Content-Type")
    .header("access-control-max-age", String(MAX_AGE_S))
    .send();
}
