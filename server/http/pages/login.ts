/** `/auth/login` (the form and its post) and `/auth/logout`. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
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

  app.get("/auth/login", async (request, reply) => {
    const next = localPath((request.query as Record<string, unknown>).next);
    if (await session(s, request)) return reply.redirect(next, 303);
    return show(request, reply, 200, next, "", null);
  });

  app.post("/auth/login", async (request, reply) => {
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
      if (err instanceof ServiceError && err.code === "RATE_LIMITED") return show(request, reply, 429, next, username, err.message);
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

  app.post("/auth/logout", async (request, reply) => {
    const sess = await session(s, request);
    if (sess) {
      checkCsrf(s, request, sess, form(request));
      await s.accounts.sessions.destroy(sess);
    }
    void reply.header("set-cookie", serializeCookie(SESSION_COOKIE, "", { secure: isSecure(request), maxAgeSeconds: 0 }));
    return reply.redirect("/auth/login", 303);
  });
}
