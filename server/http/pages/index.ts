/**
 * The pages on `{auth_url}`: login, settings, OAuth consent, and their assets. They live in one
 * encapsulated plugin so that their hooks (security headers) and their error handler (an HTML page
 * instead of the JSON envelope) apply to them alone.
 */
import type { FastifyError, FastifyInstance } from "fastify";
import { ServiceError } from "../../errors.js";
import type { Services } from "../../services/index.js";
import { authorizeRoutes } from "../oauth.js";
import { assetRoutes } from "./assets.js";
import { dashboardRoutes } from "./dashboard.js";
import { frame, html, securityHeaders, sendHtml } from "./layout.js";
import { loginRoutes } from "./login.js";
import { settingsActionRoutes } from "./settings-actions.js";
import { settingsRoutes } from "./settings.js";
import { SEE_OTHER, pageDoc } from "../openapi/route-doc.js";

const TITLES: Record<number, string> = {
  400: "Something in the request is wrong",
  403: "Not allowed",
  404: "Not found",
  429: "Too many attempts",
};

export function pageRoutes(app: FastifyInstance, s: Services): void {
  void app.register(async (pages) => {
    pages.addHook("onSend", async (_request, reply, payload) => {
      securityHeaders(reply);
      return payload;
    });
    pages.setErrorHandler((err: FastifyError, request, reply) => {
      let status = 500;
      let message = "Something went wrong on our side.";
      if (err instanceof ServiceError) ({ statusCode: status, message } = err);
      else if (err.validation || (err.statusCode && err.statusCode >= 400 && err.statusCode < 500)) {
        status = err.statusCode ?? 400;
        message = err.message;
      }
      if (status >= 500) request.log.error({ err }, "page failed");
      if (reply.sent || reply.raw.headersSent) return;
      const title = TITLES[status] ?? "Something went wrong";
      const body = html`<p class="error" role="alert">${message}</p><p><a href="/settings">Back to your settings</a></p>`;
      void sendHtml(reply, status, frame({ title, body }));
    });
    pages.get("/", { schema: pageDoc({ summary: "Home", description: "Redirects to the settings page.", ok: { 303: SEE_OTHER } }) }, async (_request, reply) => reply.redirect("/settings", 303));
    assetRoutes(pages);
    loginRoutes(pages, s);
    settingsRoutes(pages, s);
    settingsActionRoutes(pages, s);
    authorizeRoutes(pages, s);
    dashboardRoutes(pages, s);
  });
}
