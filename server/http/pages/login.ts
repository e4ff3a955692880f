/** `/auth/login` (the form and its post) and `/auth/logout`. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Type } from "@sinclair/typebox";
import { SEE_OTHER, pageDoc } from "../openapi/route-doc.js";
import { ServiceError } from "../../errors.js";
import { serializeCookie } from "../../services/accounts/cookies.js";
import { PRE_SESSION_COOKIE } from "../../services/accounts/csrf.js";
import { SESSION_COOKIE, SESSION_TTL_MS } from "../../services/accounts/sessions.js";
import type { Services } from "../../services/index.js";
import type { UserRow } from "../../store/types.js";
import { checkCsrf, csrfFor, field, form, isSecure, localPath, session } from "./context.js";
import { type Html, csrfInput, frame, html, sendHtml } from "./layout.js";

const USER_MAX = 64;
const PASSWORD_MAX = 1024;

function loginPage(csrf: string, next: string, username: string, problem: string | null): Html {
  const error = problem ? html`<p class="error" role="alert">${problem}</p>` : html``;
  return frame({
    title: "Sign in",
    body: html`${error}<section>
<form method="post" action="/auth/login">
${csrfInput(csrf)}
<input type="hidden" name="next" value="${next}">
<label for="username">User name</label>
<input type="text" id="username" name="username" value="${username}" autocomplete="username" autocapitalize="none" required maxlength="${USER_MAX}">
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required maxlength="${PASSWORD_MAX}">
<div class="actions"><button type="submit">Sign in</button></div>
</form>
</section>`,
  });
}

export function loginRoutes(app: FastifyInstance, s: Services): void {
  const show = (request: FastifyRequest, reply: FastifyReply, status: number, next: string, user: string, problem: string | null) =>
    sendHtml(reply, status, loginPage(csrfFor(s, request, reply, null), next, user, problem));

  app.get(
    "/auth/login",
    {
      schema: pageDoc({
        summary: "Sign-in page",
        description: "A form with `username` and `password` (and its CSRF field). Already signed in: redirects to `next`.",
        ok: { 200: { description: "The sign-in page.", type: "text/html" }, 303: SEE_OTHER },
        query: Type.Object({ next: Type.Optional(Type.String({ description: "a path of this server to go to after signing in" })) }),
      }),
    },
    async (request, reply) => {
    const next = localPath((request.query as Record<string, unknown>).next);
    if (await session(s, request)) return reply.redirect(next, 303);
    return show(request, reply, 200, next, "", null);
  });

  app.post(
    "/auth/login",
    {
      schema: pageDoc({
        summary: "Sign in",
        description:
          "Checks the password (stored with scrypt), sets the session cookie (a new session id at every sign-in; " +
          "`Secure` over https) and redirects to `next`. Attempts are limited per client address and per user name.",
        ok: { 303: SEE_OTHER },
        errors: {
          400: "The user name or password is missing or too long (the page again, with the message).",
          401: "Wrong user name or password (the page again).",
          403: "The form's CSRF field is missing or stale.",
          429: "Too many attempts from this address or for this user: the page again, with the message, and Retry-After until the bucket holds an attempt again.",
        },
        form: Type.Object({ username: Type.String(), password: Type.String(), csrf: Type.String(), next: Type.Optional(Type.String()) }),
      }),
    },
    async (request, reply) => {
    const body = form(request);
    const next = localPath(body.next);
    const username = field(body, "username").trim();
    const password = field(body, "password");
    checkCsrf(s, request, null, body);
    if (!username || !password || username.length > USER_MAX || password.length > PASSWORD_MAX) {
      return show(request, reply, 400, next, username.slice(0, USER_MAX), "Give your user name and your password.");
    }
    let user: UserRow | null;
    try {
      user = await s.accounts.login(request.ip, username, password);
    } catch (err) {
      if (err instanceof ServiceError && err.code === "RATE_LIMITED") {
        if (err.retryAfterS !== undefined) void reply.header("retry-after", String(err.retryAfterS));
        return show(request, reply, 429, next, username, err.message);
      }
      throw err;
    }
    if (!user) return show(request, reply, 401, next, username, "Wrong user name or password.");
    // A new session id at every login: a session id planted before login is worth nothing.
    const cookie = await s.accounts.sessions.create(user.id);
    const secure = isSecure(request);
    void reply.header("set-cookie", serializeCookie(SESSION_COOKIE, cookie, { secure, maxAgeSeconds: SESSION_TTL_MS / 1000 }));
    void reply.header("set-cookie", serializeCookie(PRE_SESSION_COOKIE, "", { secure, maxAgeSeconds: 0 }));
    return reply.redirect(next, 303);
  });

  app.post(
    "/auth/logout",
    {
      schema: pageDoc({
        summary: "Sign out",
        description: "Ends the session (with the form's CSRF field) and clears the cookie; redirects to the sign-in page.",
        ok: { 303: SEE_OTHER },
        errors: { 403: "The form's CSRF field is missing or stale." },
        form: Type.Object({ csrf: Type.String() }),
      }),
    },
    async (request, reply) => {
    const sess = await session(s, request);
    if (sess) {
      checkCsrf(s, request, sess, form(request));
      await s.accounts.sessions.destroy(sess);
    }
    void reply.header("set-cookie", serializeCookie(SESSION_COOKIE, "", { secure: isSecure(request), maxAgeSeconds: 0 }));
    return reply.redirect("/auth/login", 303);
  });
}
