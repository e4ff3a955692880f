/** /rule: create, list, get (with its run history), replace, delete, suspend and unsuspend. */
import { Type } from "@sinclair/typebox";
import type { FastifyInstance } from "fastify";
import { RidParam, RuleBody } from "../../protocol/automation.js";
import { ok } from "../../protocol/envelope.js";
import type { Services } from "../services/index.js";
import { userOf } from "./auth.js";
import { type RouteDoc, doc } from "./openapi/route-doc.js";
import { Rule, RuleCreated } from "../../protocol/responses.js";

const UNKNOWN = "No rule with this id among yours (another user's rule is reported the same way).";
const BODY =
  "`shortName`, `preconditions` and `actions` (1 to 32 handler objects `{handler, params}` each) are required; " +
  "`timeout` (seconds, a non-negative number up to a year) is the wait after firing before the rule can fire again. " +
  "Preconditions: `serviceChange {guid, to}` is true on each event whose DA equals `to`; `serviceRangeToggle {guid, " +
  "between, and}` becomes true when the value enters [between, and] from outside. A rule fires on an event that makes " +
  "one precondition true while all the others hold. Actions run serially: `serviceSendCommand {guid, da}`, `sleep " +
  "{sleepLength}` (milliseconds), `getServiceSnapshot {guid}` (a camera; the image is kept for a later " +
  "`sendToFileHost {guid}` in the same run), `sendEmail {to, subject, body}` (through `--smtp-url`). A failing action " +
  "stops that run and is recorded in the rule's history. Every GUID must name one of your devices. A rule that " +
  "fires more than 20 times a second for 5 seconds in a row (a loop) is suspended, and that is recorded in its history.";
const BAD = "A field is missing or malformed, an unknown handler, a missing or malformed param, or a GUID that is not one of your devices (the message names the handler and param).";
const ruleDoc = (d: Pick<RouteDoc, "summary" | "description" | "ok"> & Partial<RouteDoc>) => doc({ tag: "Rules", ...d });

export function ruleRoutes(app: FastifyInstance, s: Services): void {
  const user = { auth: "user" as const };
  const rules = s.automation.rules;
  const rid = (params: unknown): number => Number((params as { rid: string }).rid);

  app.post(
    "/rule",
    {
      config: user,
      schema: {
        ...ruleDoc({
          summary: "Create a rule",
          description: `A new rule is active (not suspended). ${BODY}`,
          ok: { 200: { description: "Created: its id, as a string (the spec's create answer).", data: RuleCreated } },
          errors: { 400: BAD, 409: "You have the most rules allowed (10,000): delete some first." },
        }),
        body: RuleBody,
      },
    },
    async (request) => {
    const id = await rules.create(userOf(request).userId, request.body as RuleBody);
    // The spec: `rid` is a string in the create response, a number everywhere else.
    return ok({ rid: String(id) });
  });

  app.get(
    "/rule",
    {
      config: user,
      schema: ruleDoc({
        summary: "List your rules",
        description: "Every rule with its handlers; `timeout` 0 when unset, `store` an empty object.",
        ok: { 200: { description: "Your rules.", data: Type.Array(Rule) } },
      }),
    },
    async (request) => ok(await rules.list(userOf(request).userId)));

  app.get(
    "/rule/:rid",
    {
      config: user,
      schema: {
        ...ruleDoc({
          summary: "Get one rule, with its recent runs",
          description: "The rule, and beyond the spec its `history`: its recent runs, newest first, each step with its outcome and duration.",
          ok: { 200: { description: "The rule.", data: Rule } },
          errors: { 404: UNKNOWN },
        }),
        params: RidParam,
      },
    },
    async (request) =>
    ok(await rules.get(userOf(request).userId, rid(request.params))),
  );

  app.put(
    "/rule/:rid",
    {
      config: user,
      schema: {
        ...ruleDoc({
          summary: "Replace a rule",
          description: `The same body and required fields as creation; suspension is kept. ${BODY}`,
          ok: { 200: { description: "Replaced." } },
          errors: { 400: BAD, 404: UNKNOWN },
        }),
        params: RidParam,
        body: RuleBody,
      },
    },
    async (request) => {
    await rules.update(userOf(request).userId, rid(request.params), request.body as RuleBody);
    return ok();
  });

  app.delete(
    "/rule/:rid",
    {
      config: user,
      schema: {
        ...ruleDoc({ summary: "Delete a rule", description: "The rule is removed and fires no more.", ok: { 200: { description: "Deleted." } }, errors: { 404: UNKNOWN } }),
        params: RidParam,
      },
    },
    async (request) => {
    await rules.remove(userOf(request).userId, rid(request.params));
    return ok();
  });

  app.post(
    "/rule/:rid/suspend",
    {
      config: user,
      schema: {
        ...ruleDoc({ summary: "Suspend a rule", description: "A suspended rule never fires until unsuspended. Suspending a suspended rule is not an error.", ok: { 200: { description: "Suspended." } }, errors: { 404: UNKNOWN } }),
        params: RidParam,
      },
    },
    async (request) => {
    await rules.suspend(userOf(request).userId, rid(request.params), true);
    return ok();
  });

  app.delete(
    "/rule/:rid/suspend",
    {
      config: user,
      schema: {
        ...ruleDoc({ summary: "Unsuspend a rule", description: "The rule is active again. Unsuspending an active rule is not an error.", ok: { 200: { description: "Active." } }, errors: { 404: UNKNOWN } }),
        params: RidParam,
      },
    },
    async (request) => {
    await rules.suspend(userOf(request).userId, rid(request.params), false);
    return ok();
  });
}
