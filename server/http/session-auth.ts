/**
 * The session cookie as a user credential on the REST API and the live stream, for the dashboard
 * pages (same login as the settings pages). A query credential, when given, always wins.
 *  - HTTP: the cookie counts only with the page's CSRF token in the `X-CSRF-Token` header. A
 *    cross-site page cannot set that header without a CORS preflight allowing it (the only one this
 *    server answers, the stream listener's camera path, allows it to no one: stream-cors.ts) and
 *    cannot read the token, so a forged request fails; GETs with side effects (camera snapshots,
 *    direct activation) are covered too.
 *  - WebSocket: browsers send cookies on cross-site WebSocket handshakes and no preflight happens,
 *    so the handshake's `Origin` must be this server's own origin (non-browser clients send none).
 */
import type { FastifyRequest } from "fastify";
import { forbidden, unauthorized } from "../errors.js";
import { parseCookies } from "../services/accounts/cookies.js";
import { csrfValid } from "../services/accounts/csrf.js";
import { SESSION_COOKIE } from "../services/accounts/sessions.js";
import type { UserPrincipal } from "../services/auth.js";
import type { Services } from "../services/index.js";

export const CSRF_HEADER = "x-csrf-token";

function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}

/** The user of the query credential, or of the session cookie under the rules above; throws 401/403. */
export async function resolveUser(s: Services, request: FastifyRequest): Promise<UserPrincipal> {
  const q = request.query as Record<string, unknown>;
  if (q.user_access_token !== undefined || q.access_token !== undefined) return s.auth.user(q);
  const cookie = parseCookies(request.headers.cookie).get(SESSION_COOKIE);
  if (cookie === undefined) return s.auth.user(q);
  const sess = await s.accounts.sessions.resolve(cookie);
  if (!sess) throw unauthorized("your session has expired or you signed out: sign in again");
  // A page cannot set Upgrade itself (a forbidden header name): only a real handshake carries it.
  const upgrade = request.headers.upgrade?.toLowerCase() === "websocket";
  if (upgrade) {
    if (!sameOrigin(request)) throw forbidden("a live stream signed in by the session cookie must be opened by this server's own pages");
  } else if (!csrfValid(s.accounts.key, { session: sess }, request.headers[CSRF_HEADER])) {
    throw forbidden("a request signed in by the session cookie needs the page's X-CSRF-Token header");
  }
  return { userId: sess.userId, via: "session", tokenHash: `session:${sess.hash}` };
}
