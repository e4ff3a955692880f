/** /devices and /device/:guid: list, get, PUT (command and/or rename), DELETE, heartbeat, history. */
import type { FastifyInstance } from "fastify";
import { ok } from "../../protocol/envelope.js";
import { type DevicePut as DevicePutBody, DevicePut, GuidParam, HistoryQuery, daText } from "../../protocol/payloads.js";
import { ServiceError, badRequest } from "../errors.js";
import type { Services } from "../services/index.js";
import { userOf } from "./auth.js";

export function deviceRoutes(app: FastifyInstance, s: Services): void {
  const user = { auth: "user" as const };

  app.get("/devices", { config: user }, async (request) => ok(await s.devices.list(userOf(request).userId)));

  app.get("/device/:guid", { config: user, schema: { params: GuidParam } }, async (request) => {
    const { guid } = request.params as { guid: string };
    return ok(await s.devices.get(userOf(request).userId, guid));
  });

  app.put("/device/:guid", { config: user, schema: { params: GuidParam, body: DevicePut } }, async (request, reply) => {
    const { guid } = request.params as { guid: string };
    const body = (request.body ?? {}) as DevicePutBody;
    if (body.DA === undefined && body.shortName === undefined) throw badRequest("nothing to do: give DA and/or shortName");
    const row = await s.devices.owned(userOf(request).userId, guid);
    // Two distinct operations (spec): both are attempted; result 0 when either failed.
    const failures: ServiceError[] = [];
    const attempt = async (op: () => Promise<void>): Promise<void> => {
      try {
        await op();
      } catch (err) {
        if (!(err instanceof ServiceError)) throw err;
        failures.push(err);
      }
    };
    if (body.DA !== undefined) await attempt(() => s.devices.actuate(row, daText(body.DA as string | number)));
    if (body.shortName !== undefined) await attempt(() => s.devices.rename(row, body.shortName as string));
    if (failures.length > 0) {
      const first = failures[0] as ServiceError;
      throw new ServiceError(first.code, failures.map((f) => f.message).join("; "));
    }
    return reply.send(ok());
  });

  app.delete("/device/:guid", { config: user, schema: { params: GuidParam } }, async (request) => {
    const { guid } = request.params as { guid: string };
    await s.devices.remove(userOf(request).userId, guid);
    return ok();
  });

  app.get("/device/:guid/heartbeat", { config: user, schema: { params: GuidParam } }, async (request) => {
    const { guid } = request.params as { guid: string };
    return ok(await s.devices.heartbeat(userOf(request).userId, guid));
  });

  app.get(
    "/device/:guid/data",
    { config: user, schema: { params: GuidParam, querystring: HistoryQuery } },
    async (request) => {
      const { guid } = request.params as { guid: string };
      const q = request.query as { from?: number; to?: number; interval?: string; fn?: string };
      const row = await s.devices.owned(userOf(request).userId, guid);
      return ok(await s.history.query(row.id, q));
    },
  );
}
