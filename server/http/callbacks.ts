/** /device/:guid/callback: one URL per device. Delivery lives in the callback dispatcher. */
import type { FastifyInstance } from "fastify";
import { ok } from "../../protocol/envelope.js";
import { CallbackBody, GuidParam } from "../../protocol/payloads.js";
import { conflict, notFound } from "../errors.js";
import type { Services } from "../services/index.js";
import { newToken } from "../services/secrets.js";
import { userOf } from "./auth.js";

export function callbackRoutes(app: FastifyInstance, s: Services): void {
  const user = { auth: "user" as const };
  const owned = async (request: { params: unknown; principal: unknown }, userId: number) =>
    s.devices.owned(userId, (request.params as { guid: string }).guid);

  app.post("/device/:guid/callback", { config: user, schema: { params: GuidParam, body: CallbackBody } }, async (request) => {
    const device = await owned(request, userOf(request).userId);
    if (await s.store.callbacks.get(device.id)) throw conflict(`device ${device.guid} already has a callback: use PUT to change it`);
    const { url } = request.body as { url: string };
    await s.store.callbacks.set({ device_id: device.id, url, secret: newToken(), created: s.clock() });
    return ok();
  });

  app.get("/device/:guid/callback", { config: user, schema: { params: GuidParam } }, async (request) => {
    const device = await owned(request, userOf(request).userId);
    const cb = await s.store.callbacks.get(device.id);
    if (!cb) throw notFound(`device ${device.guid} has no callback`);
    return ok({ url: cb.url, secret: cb.secret });
  });

  app.put("/device/:guid/callback", { config: user, schema: { params: GuidParam, body: CallbackBody } }, async (request) => {
    const device = await owned(request, userOf(request).userId);
    const { url } = request.body as { url: string };
    const existing = await s.store.callbacks.get(device.id);
    await s.store.callbacks.set({
      device_id: device.id,
      url,
      secret: existing?.secret ?? newToken(),
      created: existing?.created ?? s.clock(),
    });
    return ok();
  });

  app.delete("/device/:guid/callback", { config: user, schema: { params: GuidParam } }, async (request) => {
    const device = await owned(request, userOf(request).userId);
    if (!(await s.store.callbacks.remove(device.id))) throw notFound(`device ${device.guid} has no callback`);
    return ok();
  });
}
