/** /devices and /device/:guid: list, get, PUT (command and/or rename), DELETE, heartbeat, history. */
import type { FastifyInstance } from "fastify";
import { ok } from "../../protocol/envelope.js";
import { type DevicePut as DevicePutBody, DevicePut, GuidParam, HistoryQuery, daText } from "../../protocol/payloads.js";
import { ServiceError, badRequest } from "../errors.js";
import type { Services } from "../services/index.js";
import { userOf } from "./auth.js";
import { doc } from "./openapi/route-doc.js";
import { DataPoints, Device, DeviceMap, Heartbeat } from "../../protocol/responses.js";

const UNKNOWN = "No device with this GUID among yours (another user's device is reported the same way).";

export function deviceRoutes(app: FastifyInstance, s: Services): void {
  const user = { auth: "user" as const };

  app.get(
    "/devices",
    {
      config: user,
      schema: doc({
        tag: "Devices",
        summary: "List your devices",
        description:
          "Every device of your account, keyed by GUID (`<nodeId>_<G>_<V>_<D>`). A device exists from the first block event " +
          "that names it; its type, default name, sensor/actuator flags and history flag come from the device-type table " +
          "(docs/api.md \"Device types\"). `last_data.DA` is a number for numeric types and a string otherwise.",
        ok: { 200: { description: "Your devices.", data: DeviceMap } },
      }),
    },
    async (request) => ok(await s.devices.list(userOf(request).userId)));

  app.get(
    "/device/:guid",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Devices",
          summary: "Get one device",
          description: "The device with its `guid`, sub-devices (without their tokens) and last reported value.",
          ok: { 200: { description: "The device.", data: Device } },
          errors: { 404: UNKNOWN },
        }),
        params: GuidParam,
      },
    },
    async (request) => {
    const { guid } = request.params as { guid: string };
    return ok(await s.devices.get(userOf(request).userId, guid));
  });

  app.put(
    "/device/:guid",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Devices",
          summary: "Command and/or rename a device",
          description:
            "`DA` sends a command to the device's block (delivered on its commands long-poll; a string, or a number sent as " +
            "its decimal text); `shortName` renames it. Give at least one. Both are attempted when both are given; " +
            "`result` is 0 when either failed, and the message lists each failure (the spec's two distinct operations). " +
            "A command for a node whose poll is held empty goes straight into that poll's answer, and this request is " +
            "answered once that answer was written; otherwise it is queued durably and expires if not delivered within " +
            "60 s. Other fields are ignored.",
          ok: { 200: { description: "Both (or the one given) succeeded." } },
          errors: {
            400: "Neither DA nor shortName given, a field malformed, or DA sent to a device that is not an actuator (a pure sensor).",
            404: UNKNOWN,
          },
        }),
        params: GuidParam,
        body: DevicePut,
      },
    },
    async (request, reply) => {
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

  app.delete(
    "/device/:guid",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Devices",
          summary: "Delete a device",
          description:
            "Removes the device, its history, callback, sub-devices and queued commands. A block that still reports it " +
            "creates it again on its next event. Rules that name it stay and no longer fire.",
          ok: { 200: { description: "Deleted." } },
          errors: { 404: UNKNOWN },
        }),
        params: GuidParam,
      },
    },
    async (request) => {
    const { guid } = request.params as { guid: string };
    await s.devices.remove(userOf(request).userId, guid);
    return ok();
  });

  app.get(
    "/device/:guid/heartbeat",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Devices",
          summary: "Last reported value",
          description: "The device's last reading as a heartbeat record. `DA` and `timestamp` are null until it has reported a value (a device created by a config event).",
          ok: { 200: { description: "The last reading.", data: Heartbeat } },
          errors: { 404: UNKNOWN },
        }),
        params: GuidParam,
      },
    },
    async (request) => {
    const { guid } = request.params as { guid: string };
    return ok(await s.devices.heartbeat(userOf(request).userId, guid));
  });

  app.get(
    "/device/:guid/data",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Devices",
          summary: "History of a device",
          description:
            "Readings between `from` and `to` (epoch milliseconds; defaults: `to` now, `from` 24 h before `to`). Without " +
            "`interval`, the raw readings in time order (`v` a number, or the text of a non-numeric reading), at most " +
            "100,000 of them (a larger range needs an interval). With `interval` (`<n><unit>`, unit min, hour, day, month " +
            "or year), one point per non-empty bucket, aligned in UTC (months and years on calendar boundaries), `t` the " +
            "bucket's start, `v` the fold `fn` of its readings: mean (default), sum, min, max, stddev (population), ss (sum " +
            "of squares), count. Numeric folds skip non-numeric readings; count counts all.",
          ok: { 200: { description: "The data points.", data: DataPoints } },
          errors: { 400: "A query parameter is malformed, `from` is after `to`, or the range holds more than 100,000 raw readings (give an interval).", 404: UNKNOWN },
        }),
        params: GuidParam,
        querystring: HistoryQuery,
      },
    },
    async (request) => {
      const { guid } = request.params as { guid: string };
      const q = request.query as { from?: number; to?: number; interval?: string; fn?: string };
      const row = await s.devices.owned(userOf(request).userId, guid);
      return ok(await s.history.query(row.id, q));
    },
  );
}
