/** /device/:guid/subdevice…: create, change, delete, actuation counts, and the webhook tickle. */
import type { FastifyInstance } from "fastify";
import { CAUSE_HEADER, parseCause } from "../services/automation/rules/cause.js";
import {
  SubDeviceCreate,
  SubDeviceDataQuery,
  SubDeviceParams,
  SubDeviceUpdate,
  TickleParams,
} from "../../protocol/automation.js";
import { ok } from "../../protocol/envelope.js";
import { GuidParam } from "../../protocol/payloads.js";
import type { Services } from "../services/index.js";
import { hashToken } from "../services/secrets.js";
import { userOf } from "./auth.js";

export function subDeviceRoutes(app: FastifyInstance, s: Services): void {
  const user = { auth: "user" as const };
  const subs = s.automation.subdevices;

  app.post("/device/:guid/subdevice", { config: user, schema: { params: GuidParam, body: SubDeviceCreate } }, async (request) => {
    const { guid } = request.params as { guid: string };
    return ok(await subs.create(userOf(request).userId, guid, request.body as SubDeviceCreate));
  });

  app.put(
    "/device/:guid/subdevice/:subdeviceId",
    { config: user, schema: { params: SubDeviceParams, body: SubDeviceUpdate } },
    async (request) => {
      const { guid, subdeviceId } = request.params as { guid: string; subdeviceId: string };
      const r = await subs.update(userOf(request).userId, guid, subdeviceId, (request.body ?? {}) as SubDeviceUpdate);
      return r.token === undefined ? ok() : ok(r);
    },
  );

  app.delete("/device/:guid/subdevice/:subdeviceId", { config: user, schema: { params: SubDeviceParams } }, async (request) => {
    const { guid, subdeviceId } = request.params as { guid: string; subdeviceId: string };
    await subs.remove(userOf(request).userId, guid, subdeviceId);
    return ok();
  });

  app.get(
    "/device/:guid/subdevice/:subdeviceId/data",
    { config: user, schema: { params: SubDeviceParams, querystring: SubDeviceDataQuery } },
    async (request) => {
      const { guid, subdeviceId } = request.params as { guid: string; subdeviceId: string };
      const q = request.query as { from?: number; to?: number; interval?: string };
      return ok(await subs.data(userOf(request).userId, guid, subdeviceId, q));
    },
  );

  // No query credential: the token in the path authorises the tickle.
  app.post("/device/:deviceGuid/subdevice/:subDeviceId/tickle/:token", { schema: { params: TickleParams } }, async (request) => {
    const { deviceGuid, subDeviceId, token } = request.params as { deviceGuid: string; subDeviceId: string; token: string };
    s.rateLimiter.take(`tickle:${hashToken(token)}`);
    await subs.tickle(deviceGuid, subDeviceId, token, parseCause(request.headers[CAUSE_HEADER]));
    return ok();
  });
}
