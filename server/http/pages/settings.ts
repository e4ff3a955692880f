/** `GET /settings`: the account settings page (sign-in required). */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { SEE_OTHER, pageDoc } from "../openapi/route-doc.js";
import { D } from "../../../protocol/device-types.js";
import type { Session } from "../../services/accounts/sessions.js";
import type { Services } from "../../services/index.js";
import { isServiceNode, serviceDeviceGuid } from "../../services/service-devices.js";
import { csrfFor, loginRedirect, session } from "./context.js";
import { sendHtml } from "./layout.js";
import { type Flash, settingsPage } from "./settings-view.js";

/** Renders the settings page of the session's user, with an optional one-time message. */
export async function showSettings(
  s: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  sess: Session,
  flash?: Flash,
  status = 200,
): Promise<FastifyReply> {
  const { store } = s;
  const userId = sess.userId;
  const user = await store.users.byId(userId);
  const [personal, vblock, webhook, sms, blocks, apps, grants] = await Promise.all([
    store.tokens.list({ user_id: userId, kind: "user" }),
    store.tokens.list({ user_id: userId, kind: "vblock" }),
    store.devices.byGuid(serviceDeviceGuid(userId, D.webhook)),
    store.devices.byGuid(serviceDeviceGuid(userId, D.sms)),
    store.blocks.list(userId),
    s.accounts.oauth.listApps(userId),
    s.accounts.oauth.grants(userId),
  ]);
  const page = settingsPage({
    userName: user?.name ?? "",
    csrf: csrfFor(s, request, reply, sess),
    personal: personal.at(-1) ?? null,
    vblock: vblock.at(-1) ?? null,
    webhook: webhook !== null,
    sms: sms !== null,
    blocks: blocks.filter((b) => !isServiceNode(b.node_id)),
    apps,
    grants,
    flash,
  });
  return sendHtml(reply, status, page);
}

export function settingsRoutes(app: FastifyInstance, s: Services): void {
  app.get(
    "/settings",
    {
      schema: pageDoc({
        summary: "Settings page",
        description:
          "After sign-in: the user access token (enable, revoke), the virtual block token (enable, revoke), OAuth " +
          "applications (register with a name and redirect URI; the client secret is shown once), the grants given to " +
          "applications, and the Webhooks and SMS devices. Without a session: redirects to sign-in.",
        ok: { 200: { description: "The page.", type: "text/html" }, 303: SEE_OTHER },
      }),
    },
    async (request, reply) => {
    const sess = await session(s, request);
    if (!sess) return loginRedirect(reply, "/settings");
    return showSettings(s, request, reply, sess);
  });
}
