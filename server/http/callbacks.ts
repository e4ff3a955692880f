/** /device/:guid/callback: one URL per device. Delivery lives in the callback dispatcher. */
import type { FastifyInstance } from "fastify";
import { ok } from "../../protocol/envelope.js";
import { CallbackBody, GuidParam } from "../../protocol/payloads.js";
import { conflict, notFound } from "../errors.js";
import type { Services } from "../services/index.js";
import { assertOutboundUrl } from "../services/outbound-policy.js";
import { newToken } from "../services/secrets.js";
import { userOf } from "./auth.js";
import { doc } from "./openapi/route-doc.js";
import { Callback } from "../../protocol/responses.js";

const UNKNOWN = "No device with this GUID among yours.";
const DELIVERY =
  "The service POSTs `{GUID,G,V,D,DA,timestamp,node}` (the webhook `callbackDelivery`) within a second of each " +
  "reading, signed with header `X-Blockkit-Signature: sha256=<HMAC-SHA256 of the body keyed with the secret>` and " +
  "numbered with `X-Blockkit-Delivery` (the same on retries); a failed delivery is retried with backoff (at least 5 " +
  "tries over about a minute), in per-device order. The URL must be http(s), and one the server's outbound policy " +
  "allows: a literal address it refuses (link-local, the server's own listeners, outside `--outbound-allow`, inside " +
  "`--outbound-deny`) or `localhost` is refused at once with 400 naming the rule; a host name is checked when " +
  "a delivery connects.";
const REFUSED = "The URL is not a valid http(s) URL, or the outbound policy refuses its address (the message names the URL and the rule).";

export function callbackRoutes(app: FastifyInstance, s: Services): void {
  const user = { auth: "user" as const };
  const owned = async (request: { params: unknown; principal: unknown }, userId: number) =>
    s.devices.owned(userId, (request.params as { guid: string }).guid);

  app.post(
    "/device/:guid/callback",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Callbacks",
          summary: "Register the device's callback URL",
          description: `One URL per device. ${DELIVERY}`,
          ok: { 200: { description: "Registered." } },
          errors: { 400: REFUSED, 404: UNKNOWN, 409: "The device already has a callback: change it with PUT." },
        }),
        params: GuidParam,
        body: CallbackBody,
      },
    },
    async (request) => {
    const device = await owned(request, userOf(request).userId);
    if (await s.store.callbacks.get(device.id)) throw conflict(`device ${device.guid} already has a callback: use PUT to change it`);
    const { url } = request.body as { url: string };
    assertOutboundUrl(s.automation.outbound, "callback URL", url);
    await s.store.callbacks.set({ device_id: device.id, url, secret: newToken(), created: s.clock() });
    return ok();
  });

  app.get(
    "/device/:guid/callback",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Callbacks",
          summary: "Get the device's callback",
          description: "The URL and, beyond the spec's `url`, the `secret` that signs the deliveries (so a receiver can check them).",
          ok: { 200: { description: "The callback.", data: Callback } },
          errors: { 404: "No device with this GUID among yours, or it has no callback." },
        }),
        params: GuidParam,
      },
    },
    async (request) => {
    const device = await owned(request, userOf(request).userId);
    const cb = await s.store.callbacks.get(device.id);
    if (!cb) throw notFound(`device ${device.guid} has no callback`);
    return ok({ url: cb.url, secret: cb.secret });
  });

  app.put(
    "/device/:guid/callback",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Callbacks",
          summary: "Replace (or create) the device's callback URL",
          description: "Sets the URL whether or not one exists; an existing callback keeps its secret.",
          ok: { 200: { description: "Set." } },
          errors: { 400: REFUSED, 404: UNKNOWN },
        }),
        params: GuidParam,
        body: CallbackBody,
      },
    },
    async (request) => {
    const device = await owned(request, userOf(request).userId);
    const { url } = request.body as { url: string };
    assertOutboundUrl(s.automation.outbound, "callback URL", url);
    const existing = await s.store.callbacks.get(device.id);
    await s.store.callbacks.set({
      device_id: device.id,
      url,
      secret: existing?.secret ?? newToken(),
      created: existing?.created ?? s.clock(),
    });
    return ok();
  });

  app.delete(
    "/device/:guid/callback",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Callbacks",
          summary: "Remove the device's callback",
          description: "Once this returns, nothing more is POSTed to the old URL, retries included.",
          ok: { 200: { description: "Removed." } },
          errors: { 404: "No device with this GUID among yours, or it has no callback." },
        }),
        params: GuidParam,
      },
    },
    async (request) => {
    const device = await owned(request, userOf(request).userId);
    if (!(await s.store.callbacks.remove(device.id))) throw notFound(`device ${device.guid} has no callback`);
    return ok();
  });
}
