/**
 * OAuth 2 on `{auth_url}` (spec "OAuth 2"): `/oauth/authorize` (GET shows the consent page after
 * sign-in, POST records the decision) and `/oauth/access_token` (code for token, form or JSON body).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { badRequest } from "../errors.js";
import { type AuthorizeRequest, type RedirectError, withParams } from "../services/accounts/oauth.js";
import type { Session } from "../services/accounts/sessions.js";
import type { Services } from "../services/index.js";
import { checkCsrf, csrfFor, field, form, loginRedirect, session } from "./pages/context.js";
import { consentPage } from "./pages/consent.js";
import { contentSecurityPolicy, sendHtml } from "./pages/layout.js";
import { Type } from "@sinclair/typebox";
import { doc } from "./openapi/route-doc.js";
import { OAuthToken } from "../../protocol/responses.js";

const AUTHORIZE_PARAMS = ["client_id", "redirect_uri", "scope", "response_type", "state"] as const;

function isRedirectError(r: AuthorizeRequest | RedirectError): r is RedirectError {
  return "error" in r;
}

function authorizeUrl(params: Record<string, unknown>): string {
  const q = new URLSearchParams();
  for (const k of AUTHORIZE_PARAMS) if (typeof params[k] === "string") q.set(k, params[k]);
  return `/oauth/authorize?${q.toString()}`;
}

async function showConsent(s: Services, request: FastifyRequest, reply: FastifyReply, sess: Session, req: AuthorizeRequest) {
  const [user, owner] = await Promise.all([s.store.users.byId(sess.userId), s.store.users.byId(req.app.user_id)]);
  // The decision's redirect leaves this origin: allow it in form-action, or browsers block it.
  void reply.header("content-security-policy", contentSecurityPolicy([new URL(req.redirectUri).origin]));
  const csrf = csrfFor(s, request, reply, sess);
  return sendHtml(reply, 200, consentPage({ userName: user?.name ?? "", ownerName: owner?.name ?? "", csrf, req }));
}

/** GET and POST /oauth/authorize: registered with the pages (HTML errors, security headers). */
export function authorizeRoutes(app: FastifyInstance, s: Services): void {
  const oauth = s.accounts.oauth;
  const toClient = (reply: FastifyReply, e: RedirectError) =>
    reply.redirect(withParams(e.redirectUri, { error: e.error, error_description: e.description, state: e.state }), 303);

  const authorizeQuery = Type.Object({
    client_id: Type.String({ description: "issued at registration" }),
    redirect_uri: Type.String({ description: "exactly the URI given at registration" }),
    scope: Type.String({ description: "comma-separated; only `all` is supported" }),
    response_type: Type.Literal("code"),
    state: Type.Optional(Type.String({ description: "returned unchanged to the redirect URI" })),
  });
  app.get(
    "/oauth/authorize",
    {
      schema: doc({
        tag: "OAuth",
        summary: "Step 1: ask the user (consent page)",
        description:
          "The browser redirect of the authorization code grant. A request whose client or redirect URI is wrong is " +
          "shown as an error page (never redirected); one with another fault (scope, response_type) is redirected to " +
          "the redirect URI with `error` and `error_description`. A user who is not signed in is sent to the sign-in " +
          "page first. The consent page's form posts back here.",
        ok: {
          200: { description: "The consent page.", type: "text/html" },
          303: { description: "To the sign-in page, or to the redirect URI with `error`.", empty: true, headers: { location: "where to go" } },
        },
        errors: { 400: "Unknown client_id, or a redirect_uri that is not the registered one." },
        query: authorizeQuery,
        html: true,
      }),
    },
    async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const req = await oauth.checkAuthorize(query);
    if (isRedirectError(req)) return toClient(reply, req);
    const sess = await session(s, request);
    if (!sess) return loginRedirect(reply, authorizeUrl(query));
    return showConsent(s, request, reply, sess, req);
  });

  app.post(
    "/oauth/authorize",
    {
      schema: doc({
        tag: "OAuth",
        summary: "Step 1: the user's decision",
        description:
          "The consent form: the authorize parameters, the form's CSRF field and `decision` (`allow` or `deny`). Allow " +
          "redirects to the redirect URI with a single-use `code` (valid 10 minutes) and `state`; deny with " +
          "`error=access_denied`.",
        ok: { 303: { description: "To the redirect URI (or to the sign-in page).", empty: true, headers: { location: "where to go" } } },
        errors: { 400: "A decision that is neither allow nor deny, or a wrong client or redirect URI.", 403: "The form's CSRF field is missing or stale." },
        body: {
          schema: Type.Object({ decision: Type.Union([Type.Literal("allow"), Type.Literal("deny")]), csrf: Type.String(), client_id: Type.String(), redirect_uri: Type.String(), scope: Type.String(), response_type: Type.Literal("code"), state: Type.Optional(Type.String()) }),
          types: ["application/x-www-form-urlencoded"],
        },
        html: true,
      }),
    },
    async (request, reply) => {
    const body = form(request);
    const sess = await session(s, request);
    if (!sess) return loginRedirect(reply, authorizeUrl(body));
    checkCsrf(s, request, sess, body);
    const req = await oauth.checkAuthorize(body);
    if (isRedirectError(req)) return toClient(reply, req);
    const decision = field(body, "decision");
    if (decision === "deny") {
      return toClient(reply, { redirectUri: req.redirectUri, state: req.state, error: "access_denied", description: "the user denied access" });
    }
    if (decision !== "allow") throw badRequest(`decision: "${decision.slice(0, 32)}" is neither allow nor deny`);
    const code = await oauth.issueCode(sess.userId, req);
    s.log.info({ userId: sess.userId, clientId: req.app.client_id }, "oauth code issued");
    return reply.redirect(withParams(req.redirectUri, { code, state: req.state }), 303);
  });
}

/** POST /oauth/access_token: a JSON API (envelope errors), outside the pages. */
export function accessTokenRoutes(app: FastifyInstance, s: Services): void {
  app.post(
    "/oauth/access_token",
    {
      schema: doc({
        tag: "OAuth",
        summary: "Step 2: exchange the code for an access token",
        description:
          "A form or JSON body. The code is single-use and lives 10 minutes; `redirect_uri`, when given, must be the one " +
          "of the authorization request. The token lasts until the user revokes the grant (settings page); send it as " +
          "the query parameter `access_token`. The answer is not the envelope, and is not cached. A refusal is the " +
          "envelope, its `error` starting with the OAuth 2 error code (invalid_request, invalid_client, invalid_grant, " +
          "unsupported_grant_type).",
        ok: { 200: { description: "The access token.", body: OAuthToken } },
        errors: {
          400: "A missing parameter, a grant_type other than authorization_code, or a code that is unknown, used or expired.",
          401: "Unknown client_id or wrong client_secret.",
        },
        body: {
          schema: Type.Object({
            client_id: Type.String(),
            client_secret: Type.String(),
            code: Type.String({ description: "from step 1" }),
            grant_type: Type.Literal("authorization_code"),
            redirect_uri: Type.Optional(Type.String()),
          }),
          types: ["application/x-www-form-urlencoded", "application/json"],
        },
      }),
    },
    async (request, reply) => {
    const accessToken = await s.accounts.oauth.exchange(form(request));
    void reply.header("cache-control", "no-store").header("pragma", "no-cache");
    return { access_token: accessToken, token_type: "bearer", scope: "all" };
  });
}
