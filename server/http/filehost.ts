/**
 * The File Host device: `GET {auth_url}/auth/filehost` adds it (like /auth/webhook), and
 * `PUT /device/:guid/filehost {target}` sets where sendToFileHost stores files (kept in its meta).
 */
import { Type } from "@sinclair/typebox";
import type { FastifyInstance } from "fastify";
import { D } from "../../protocol/device-types.js";
import { ok } from "../../protocol/envelope.js";
import { GuidParam } from "../../protocol/payloads.js";
import { badRequest } from "../errors.js";
import { checkTarget } from "../services/automation/file-host.js";
import type { Services } from "../services/index.js";
import { ensureServiceDevice } from "../services/service-devices.js";
import { userOf } from "./auth.js";

const TargetBody = Type.Object({ target: Type.String({ minLength: 1, maxLength: 2048 }) }, { additionalProperties: true });

/** Registered at the root of the API listener ({auth_url}). */
export function fileHostAuthRoutes(app: FastifyInstance, s: Services): void {
  app.get("/auth/filehost", { config: { auth: "user" } }, async (request) => {
    const row = await ensureServiceDevice(s.store, userOf(request).userId, D.filehost, s.clock());
    return ok({ guid: row.guid });
  });
}

/** Registered under /rest/v0. */
export function fileHostRoutes(app: FastifyInstance, s: Services): void {
  app.put("/device/:guid/filehost", { config: { auth: "user" }, schema: { params: GuidParam, body: TargetBody } }, async (request) => {
    const { guid } = request.params as { guid: string };
    const row = await s.devices.owned(userOf(request).userId, guid);
    if (row.v !== 0 || row.d !== D.filehost) throw badRequest(`device ${guid} is not a File Host device (D ${D.filehost})`);
    const target = checkTarget((request.body as { target: string }).target);
    await s.store.devices.patchMeta(row.id, { path: ["target"], value: target });
    return ok();
  });
}
