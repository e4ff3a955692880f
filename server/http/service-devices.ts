/** `GET {auth_url}/auth/webhook` and `/auth/sms`: add the user's Webhooks or SMS device. */
import type { FastifyInstance } from "fastify";
import { D } from "../../protocol/device-types.js";
import { ok } from "../../protocol/envelope.js";
import type { Services } from "../services/index.js";
import { ensureServiceDevice } from "../services/service-devices.js";
import { userOf } from "./auth.js";

export function serviceDeviceRoutes(app: FastifyInstance, s: Services): void {
  const user = { auth: "user" as const };
  app.get("/auth/webhook", { config: user }, async (request) => {
    const row = await ensureServiceDevice(s.store, userOf(request).userId, D.webhook, s.clock());
    return ok({ guid: row.guid });
  });
  app.get("/auth/sms", { config: user }, async (request) => {
    const row = await ensureServiceDevice(s.store, userOf(request).userId, D.sms, s.clock());
    return ok({ guid: row.guid });
  });
}
