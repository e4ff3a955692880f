/** Per-request helpers of the pages: the session, the CSRF binding and checks, safe redirects. */
import { randomBytes } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { forbidden } from "../../errors.js";
import { parseCookies, serializeCookie } from "../../services/accounts/cookies.js";
import { type CsrfBinding, PRE_SESSION_COOKIE, csrfToken, csrfValid } from "../../services/accounts/csrf.js";
import { SESSION_COOKIE, type Session, signed, unsign } from "../../services/accounts/sessions.js";
import type { Services } from "../../services/index.js";

export function cookies(request: FastifyRequest): Map<string, string> {
  return parseCookies(request.headers.cookie);
}

export function isSecure(request: FastifyRequest): boolean {
  return request.protocol === "https";
}

export function session(s: Services, request: FastifyRequest): Promise<Session | null> {
  return s.accounts.sessions.resolve(cookies(request).get(SESSION_COOKIE));
}

/** The form body as a string map (form-encoded or JSON); anything else is an empty form. */
export function form(request: FastifyRequest): Record<string, unknown> {
  const b = request.body;
  return b && typeof b === "object" && !Array.isArray(b) ? (b as Record<string, unknown>) : {};
}

export function field(body: Record<string, unknown>, name: string): string {
  const v = body[name];
  return typeof v === "string" ? v : "";
}

/**
 * The CSRF token for a page's forms: bound to the session, or before login to a pre-session id
 * kept in a cookie (set here when the browser has none).
 */
export function csrfFor(s: Services, request: FastifyRequest, reply: FastifyReply, sess: Session | null): string {
  const key = s.accounts.key;
  if (sess) return csrfToken(key, { session: sess });
  let pre = unsign(key, cookies(request).get(PRE_SESSION_COOKIE));
  if (!pre) {
    pre = randomBytes(24).toString("base64url");
    void reply.header("set-cookie", serializeCookie(PRE_SESSION_COOKIE, signed(key, pre), { secure: isSecure(request) }));
  }
  return csrfToken(key, { preSession: pre });
}

/** Refuses a post whose hidden CSRF field does not match this browser. */
export function checkCsrf(s: Services, request: FastifyRequest, sess: Session | null, body: Record<string, unknown>): void {
  const key = s.accounts.key;
  let binding: CsrfBinding | null = null;
  if (sess) binding = { session: sess };
  else {
    const pre = unsign(key, cookies(request).get(PRE_SESSION_COOKIE));
    if (pre) binding = { preSession: pre };
  }
  if (!csrfValid(key, binding, body.csrf)) {
    throw forbidden("This form has expired or did not come from this site. Reload the page and try again.");
  }
}

/** A local path to return to after login; anything else (other hosts, `//x`, `/\x`) becomes /settings. */
export function localPath(next: unknown): string {
  if (typeof next !== "string" || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) return "/settings";
  // Browsers drop tabs and newlines from URLs: "/\t/evil.example" would become "//evil.example".
  if ([...next].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f) || next.length > 4000) return "/settings";
  return next;
}

export function loginRedirect(reply: FastifyReply, next: string): FastifyReply {
  return reply.redirect(`/auth/login?next=${encodeURIComponent(next)}`, 303);
}
