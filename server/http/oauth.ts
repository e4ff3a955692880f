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

  app.get("/oauth/authorize", async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const req = await oauth.checkAuthorize(query);
    if (isRedirectError(req)) return toClient(reply, req);
    const sess = await session(s, request);
    if (!sess) return loginRedirect(reply, authorizeUrl(query));
    return showConsent(s, request, reply, sess, req);
  });

  app.post("/oauth/authorize", async (request, reply) => {
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
  app.post("/oauth/access_token", async (request, reply) => {
    const accessToken = await s.accounts.oauth.exchange(form(request));
    void reply.header("cache-control", "no-store").header("pragma", "no-cache");
    return { access_token: accessToken, token_type: "bearer", scope: "all" };
  });
}
