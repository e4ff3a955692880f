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
import { SEE_OTHER, pageDoc } from "../openapi/route-doc.js";
import { type TSchema, Type } from "@sinclair/typebox";

const csrf = Type.String({ description: "the form's hidden CSRF field" });
const enableOrRevokeForm = Type.Object({ action: Type.Union([Type.Literal("enable"), Type.Literal("revoke")]), csrf });
const clientForm = Type.Object({ client_id: Type.String(), csrf });

type Action = (sess: Session, body: Record<string, unknown>, request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

function enableOrRevoke(body: Record<string, unknown>): "enable" | "revoke" {
  const action = field(body, "action");
  if (action !== "enable" && action !== "revoke") throw badRequest(`action: "${action.slice(0, 32)}" is neither enable nor revoke`);
  return action;
}

export function settingsActionRoutes(app: FastifyInstance, s: Services): void {
  const post = (path: string, handler: Action, d: { summary: string; description: string; form: TSchema; secret?: true }): void => {
    const schema = pageDoc({
      summary: d.summary,
      description: `${d.description} Needs the session and the form's CSRF field; without a session, redirects to sign-in.`,
      ok: d.secret ? { 200: { description: "The settings page showing the new secret once.", type: "text/html" }, 303: SEE_OTHER } : { 303: SEE_OTHER },
      errors: { 400: "A field is missing or not one of the allowed values.", 403: "The form's CSRF field is missing or stale." },
      form: d.form,
    });
    app.post(path, { schema }, async (request, reply) => {
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
  }, { summary: "Enable or revoke the user access token", description: "`enable` makes a new token (revoking the previous one) and shows it once; `revoke` revokes it.", form: enableOrRevokeForm, secret: true });

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
  }, { summary: "Enable or revoke the virtual block token", description: "`enable` makes a new virtual block token (revoking the previous one) and shows it once; `revoke` revokes it.", form: enableOrRevokeForm, secret: true });

  post("/settings/services", async (sess, body, _request, reply) => {
    const device = field(body, "device");
    if (device !== "webhook" && device !== "sms") throw badRequest(`device: "${device.slice(0, 32)}" is neither webhook nor sms`);
    await ensureServiceDevice(s.store, sess.userId, device === "webhook" ? D.webhook : D.sms, s.clock());
    return back(reply);
  }, { summary: "Add the Webhooks or SMS device", description: "`device` is `webhook` or `sms`; as `GET /auth/webhook` and `/auth/sms`.", form: Type.Object({ device: Type.Union([Type.Literal("webhook"), Type.Literal("sms")]), csrf }) });

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
  }, { summary: "Register an OAuth application", description: "A name and an http(s) redirect URI without fragment; shows the client id and the client secret once. A bad field shows the page again with the message (400).", form: Type.Object({ name: Type.String(), redirect_uri: Type.String(), csrf }), secret: true });

  post("/settings/apps/delete", async (sess, body, _request, reply) => {
    await s.accounts.oauth.deleteApp(sess.userId, body.client_id);
    return back(reply);
  }, { summary: "Delete an OAuth application", description: "Deletes one of your applications and revokes every token it was given.", form: clientForm });

  post("/settings/apps/revoke", async (sess, body, _request, reply) => {
    await s.accounts.oauth.revokeAppTokens(sess.userId, body.client_id);
    return back(reply);
  }, { summary: "Revoke an application's tokens", description: "Revokes every access token your application was given by any user.", form: clientForm });

  post("/settings/grants/revoke", async (sess, body, _request, reply) => {
    await s.accounts.oauth.revokeGrant(sess.userId, body.client_id);
    return back(reply);
  }, { summary: "Revoke a grant", description: "Revokes the access you gave an application: its tokens for your account stop working.", form: clientForm });
}
