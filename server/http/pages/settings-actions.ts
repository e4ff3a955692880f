/**
 * The settings page's forms. Each post needs the session and its CSRF field. Actions that create a
 * secret answer with the page showing it once; the others redirect back to /settings.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { D } from "../../../protocol/device-types.js";
import { ServiceError, badRequest } from "../../errors.js";
import type { Session } from "../../services/accounts/sessions.js";
import type { Services } from "../../services/index.js";
import { ensureServiceDevice } from "../../services/service-devices.js";
import { checkCsrf, field, form, loginRedirect, session } from "./context.js";
import { showSettings } from "./settings.js";

type Action = (sess: Session, body: Record<string, unknown>, request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

function enableOrRevoke(body: Record<string, unknown>): "enable" | "revoke" {
  const action = field(body, "action");
  if (action !== "enable" && action !== "revoke") throw badRequest(`action: "${action.slice(0, 32)}" is neither enable nor revoke`);
  return action;
}

export function settingsActionRoutes(app: FastifyInstance, s: Services): void {
  const post = (path: string, handler: Action): void => {
    app.post(path, async (request, reply) => {
      const sess = await session(s, request);
      if (!sess) return loginRedirect(reply, "/settings");
      const body = form(request);
      checkCsrf(s, request, sess, body);
      return handler(sess, body, request, reply);
    });
  };
  const back = (reply: FastifyReply): FastifyReply => reply.redirect("/settings", 303);

  post("/settings/token", async (sess, body, request, reply) => {
    if (enableOrRevoke(body) === "revoke") {
      await s.auth.revoke({ user_id: sess.userId, kind: "user" });
      return back(reply);
    }
    const token = await s.auth.issue(sess.userId, "user");
    return showSettings(s, request, reply, sess, {
      kind: "secret",
      title: "Your new user access token",
      items: [{ label: "User access token", value: token }],
    });
  });

  post("/settings/virtual-block-token", async (sess, body, request, reply) => {
    if (enableOrRevoke(body) === "revoke") {
      await s.auth.revoke({ user_id: sess.userId, kind: "vblock" });
      return back(reply);
    }
    const token = await s.auth.issue(sess.userId, "vblock");
    return showSettings(s, request, reply, sess, {
      kind: "secret",
      title: "Your new virtual block token",
      items: [{ label: "Virtual block token", value: token }],
    });
  });

  post("/settings/services", async (sess, body, _request, reply) => {
    const device = field(body, "device");
    if (device !== "webhook" && device !== "sms") throw badRequest(`device: "${device.slice(0, 32)}" is neither webhook nor sms`);
    await ensureServiceDevice(s.store, sess.userId, device === "webhook" ? D.webhook : D.sms, s.clock());
    return back(reply);
  });

  post("/settings/apps", async (sess, body, request, reply) => {
    try {
      const app = await s.accounts.oauth.createApp(sess.userId, body.name, body.redirect_uri);
      return await showSettings(s, request, reply, sess, {
        kind: "secret",
        title: `Application ${field(body, "name").trim()} registered`,
        items: [
          { label: "Client id", value: app.client_id },
          { label: "Client secret", value: app.client_secret },
        ],
      });
    } catch (err) {
      if (err instanceof ServiceError && err.statusCode === 400) {
        return showSettings(s, request, reply, sess, { kind: "error", text: err.message }, 400);
      }
      throw err;
    }
  });

  post("/settings/apps/delete", async (sess, body, _request, reply) => {
    await s.accounts.oauth.deleteApp(sess.userId, body.client_id);
    return back(reply);
  });

  post("/settings/apps/revoke", async (sess, body, _request, reply) => {
    await s.accounts.oauth.revokeAppTokens(sess.userId, body.client_id);
    return back(reply);
  });

  post("/settings/grants/revoke", async (sess, body, _request, reply) => {
    await s.accounts.oauth.revokeGrant(sess.userId, body.client_id);
    return back(reply);
  });
}
