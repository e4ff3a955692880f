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
import { assertOutboundUrl } from "../services/outbound-policy.js";
import type { Services } from "../services/index.js";
import { ensureServiceDevice } from "../services/service-devices.js";
import { userOf } from "./auth.js";
import { doc } from "./openapi/route-doc.js";
import { ServiceDevice } from "../../protocol/responses.js";

const TargetBody = Type.Object({ target: Type.String({ minLength: 1, maxLength: 2048 }) }, { additionalProperties: true });

/** Registered at the root of the API listener ({auth_url}). */
export function fileHostAuthRoutes(app: FastifyInstance, s: Services): void {
  app.get(
    "/auth/filehost",
    {
      config: { auth: "user" },
      schema: doc({
        tag: "Account",
        summary: "Add your File Host device",
        description:
          "Not in the spec (its `sendToFileHost` action needs a device): creates your File Host device (D 104) if you " +
          "have none, and answers its GUID. Set where it stores files with `PUT /device/:guid/filehost`.",
        ok: { 200: { description: "Your File Host device.", data: ServiceDevice } },
      }),
    },
    async (request) => {
    const row = await ensureServiceDevice(s.store, userOf(request).userId, D.filehost, s.clock());
    return ok({ guid: row.guid });
  });
}

/** Registered under /rest/v0. */
export function fileHostRoutes(app: FastifyInstance, s: Services): void {
  app.put(
    "/device/:guid/filehost",
    {
      config: { auth: "user" },
      schema: {
        ...doc({
          tag: "Devices",
          summary: "Set a File Host device's target",
          description:
            "Not in the spec: where `sendToFileHost` stores a rule run's snapshot, kept in the device's `meta.target`: " +
            "an http(s) URL the file is sent to, or a relative folder under the server's files directory (letters, digits, " +
            "`.`, `_`, `-`, `/`; no `..`).",
          ok: { 200: { description: "Set." } },
          errors: { 400: "The device is not a File Host device, or the target is not one the server accepts (a URL whose literal address or `localhost` the outbound policy refuses: the message names the rule).", 404: "No device with this GUID among yours." },
        }),
        params: GuidParam,
        body: TargetBody,
      },
    },
    async (request) => {
    const { guid } = request.params as { guid: string };
    const row = await s.devices.owned(userOf(request).userId, guid);
    if (row.v !== 0 || row.d !== D.filehost) throw badRequest(`device ${guid} is not a File Host device (D ${D.filehost})`);
    const target = checkTarget((request.body as { target: string }).target);
    if (/^https?:\/\//.test(target)) assertOutboundUrl(s.automation.outbound, "File Host target", target);
    await s.store.devices.patchMeta(row.id, { path: ["target"], value: target });
    return ok();
  });
}
