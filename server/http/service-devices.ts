/** `GET {auth_url}/auth/webhook` and `/auth/sms`: add the user's Webhooks or SMS device. */
import type { FastifyInstance } from "fastify";
import { D } from "../../protocol/device-types.js";
import { ok } from "../../protocol/envelope.js";
import type { Services } from "../services/index.js";
import { ensureServiceDevice } from "../services/service-devices.js";
import { userOf } from "./auth.js";
import { type RouteDoc, doc } from "./openapi/route-doc.js";
import { ServiceDevice } from "../../protocol/responses.js";

function serviceDoc(name: string, d: number, more: string): Record<string, unknown> {
  const r: RouteDoc = {
    tag: "Account",
    summary: `Add your ${name} device`,
    description: `Creates your ${name} device (D ${d}, on your own service node) if you have none, and answers its GUID either way. ${more}`,
    ok: { 200: { description: `Your ${name} device.`, data: ServiceDevice } },
  };
  return doc(r);
}

export function serviceDeviceRoutes(app: FastifyInstance, s: Services): void {
  const user = { auth: "user" as const };
  const webhook = serviceDoc("Webhooks", D.webhook, "Sub-devices of category `webhook` live on it (the spec: a GET to this path, or the settings page).");
  app.get("/auth/webhook", { config: user, schema: webhook }, async (request) => {
    const row = await ensureServiceDevice(s.store, userOf(request).userId, D.webhook, s.clock());
    return ok({ guid: row.guid });
  });
  const sms = serviceDoc("SMS", D.sms, "Sub-devices of category `sms` live on it; their messages go through the gateway of `--sms-url`.");
  app.get("/auth/sms", { config: user, schema: sms }, async (request) => {
    const row = await ensureServiceDevice(s.store, userOf(request).userId, D.sms, s.clock());
    return ok({ guid: row.guid });
  });
}
