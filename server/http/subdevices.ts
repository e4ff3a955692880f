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
import { assertOutboundUrl } from "../services/outbound-policy.js";
import { hashToken } from "../services/secrets.js";
import { userOf } from "./auth.js";
import { doc } from "./openapi/route-doc.js";
import { DataPoints, SubDeviceCreated, SubDeviceTokenOnly } from "../../protocol/responses.js";

const UNKNOWN = "No device with this GUID among yours, or it has no such sub-device.";
const RULES =
  "`rf` needs an rf433 parent (D 11): a sensor counts an actuation each time the parent reports DA equal to its " +
  "`data` (a binary or hex code), an actuator sends its `data` to the parent as a command. `webhook` lives on your " +
  "Webhooks device (`GET {auth_url}/auth/webhook`): an actuator POSTs to its `url` (signed with the returned " +
  "`secret`), a sensor is actuated by its tickle path (its `token` is returned once). `sms` lives on your SMS device " +
  "(`GET {auth_url}/auth/sms`): an actuator whose `data` is a phone number sends the command's text through the " +
  "SMS gateway configured with `--sms-url`.";

export function subDeviceRoutes(app: FastifyInstance, s: Services): void {
  const user = { auth: "user" as const };
  const subs = s.automation.subdevices;

  app.post(
    "/device/:guid/subdevice",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Sub-devices",
          summary: "Create a sub-device",
          description: `${RULES} Other fields are ignored.`,
          ok: { 200: { description: "Created: its id, and its token or secret when it has one.", data: SubDeviceCreated } },
          errors: {
            400: "A field is missing or malformed, or the category does not suit the parent (the message says why: an rf code that is not binary or hex, an sms number that is not a phone number, a url on anything but a webhook actuator, a url whose literal address or `localhost` the outbound policy refuses: the message names the url and the rule; a host name is checked at each call).",
            404: "No device with this GUID among yours.",
            409: "Category webhook (or sms) without your Webhooks (or SMS) device: add it first.",
          },
        }),
        params: GuidParam,
        body: SubDeviceCreate,
      },
    },
    async (request) => {
    const { guid } = request.params as { guid: string };
    const body = request.body as SubDeviceCreate;
    if (body.url !== undefined) assertOutboundUrl(s.automation.outbound, "webhook url", body.url);
    return ok(await subs.create(userOf(request).userId, guid, body));
  });

  app.put(
    "/device/:guid/subdevice/:subdeviceId",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Sub-devices",
          summary: "Change a sub-device",
          description:
            "Fields given replace the stored ones, under the same rules as creation. A sub-device that becomes a webhook " +
            "sensor gets a new tickle token, returned in `data.token` (the only case with `data`); one that stops being " +
            "one loses its token.",
          ok: { 200: { description: "Changed (with `data.token` when a new tickle token was made).", data: SubDeviceTokenOnly, dataOptional: true } },
          errors: { 400: "A field is malformed or does not suit the parent, or the outbound policy refuses the url (as on creation).", 404: UNKNOWN },
        }),
        params: SubDeviceParams,
        body: SubDeviceUpdate,
      },
    },
    async (request) => {
      const { guid, subdeviceId } = request.params as { guid: string; subdeviceId: string };
      const body = (request.body ?? {}) as SubDeviceUpdate;
      if (body.url !== undefined) assertOutboundUrl(s.automation.outbound, "webhook url", body.url);
      const r = await subs.update(userOf(request).userId, guid, subdeviceId, body);
      return r.token === undefined ? ok() : ok(r);
    },
  );

  app.delete(
    "/device/:guid/subdevice/:subdeviceId",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Sub-devices",
          summary: "Delete a sub-device",
          description: "Rules that name it are kept and become ineffectual (the spec).",
          ok: { 200: { description: "Deleted." } },
          errors: { 404: UNKNOWN },
        }),
        params: SubDeviceParams,
      },
    },
    async (request) => {
    const { guid, subdeviceId } = request.params as { guid: string; subdeviceId: string };
    await subs.remove(userOf(request).userId, guid, subdeviceId);
    return ok();
  });

  app.get(
    "/device/:guid/subdevice/:subdeviceId/data",
    {
      config: user,
      schema: {
        ...doc({
          tag: "Sub-devices",
          summary: "Actuation counts of a sub-device",
          description:
            "`from`, `to` and `interval` as in a device's history (defaults: the last 24 h). With an interval, `v` is the " +
            "number of actuations in each non-empty bucket; without, one point per actuation with `v` 1 (at most 100,000).",
          ok: { 200: { description: "The counts.", data: DataPoints } },
          errors: { 400: "A query parameter is malformed, or the range holds more than 100,000 actuations without an interval.", 404: UNKNOWN },
        }),
        params: SubDeviceParams,
        querystring: SubDeviceDataQuery,
      },
    },
    async (request) => {
      const { guid, subdeviceId } = request.params as { guid: string; subdeviceId: string };
      const q = request.query as { from?: number; to?: number; interval?: string };
      return ok(await subs.data(userOf(request).userId, guid, subdeviceId, q));
    },
  );

  // No query credential: the token in the path authorises the tickle.
  app.post(
    "/device/:deviceGuid/subdevice/:subDeviceId/tickle/:token",
    {
      schema: {
        ...doc({
          tag: "Sub-devices",
          summary: "Tickle a webhook sensor",
          description:
            "No credential: the token in the path (returned when the sensor was made) authorises it. Counts an " +
            "actuation and emits a data event on your Webhooks device with DA = the sub-device's `data` (its id when " +
            "empty), so `serviceChange {guid, to}` rules fire on it. No body is needed. Header `X-Blockkit-Cause` (rule " +
            "ids, comma-separated), which the service's own webhook calls carry, is passed on to that event: a rule " +
            "never fires on an event its own actions caused, nor past a chain of 8 rules.",
          ok: { 200: { description: "Counted, and the data event committed." } },
          errors: {
            401: "No such webhook sensor, or the token is wrong (the two are not told apart).",
            429: "Too many tickles with this token (the credentials' rate limit): retry after Retry-After.",
          },
        }),
        params: TickleParams,
      },
    },
    async (request) => {
    const { deviceGuid, subDeviceId, token } = request.params as { deviceGuid: string; subDeviceId: string; token: string };
    s.rateLimiter.take(`tickle:${hashToken(token)}`);
    await subs.tickle(deviceGuid, subDeviceId, token, parseCause(request.headers[CAUSE_HEADER]));
    return ok();
  });
}
