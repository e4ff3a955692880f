/** /rule: create, list, get (with its run history), replace, delete, suspend and unsuspend. */
import type { FastifyInstance } from "fastify";
import { RidParam, RuleBody } from "../../protocol/automation.js";
import { ok } from "../../protocol/envelope.js";
import type { Services } from "../services/index.js";
import { userOf } from "./auth.js";

export function ruleRoutes(app: FastifyInstance, s: Services): void {
  const user = { auth: "user" as const };
  const rules = s.automation.rules;
  const rid = (params: unknown): number => Number((params as { rid: string }).rid);

  app.post("/rule", { config: user, schema: { body: RuleBody } }, async (request) => {
    const id = await rules.create(userOf(request).userId, request.body as RuleBody);
    // The spec: `rid` is a string in the create response, a number everywhere else.
    return ok({ rid: String(id) });
  });

  app.get("/rule", { config: user }, async (request) => ok(await rules.list(userOf(request).userId)));

  app.get("/rule/:rid", { config: user, schema: { params: RidParam } }, async (request) =>
    ok(await rules.get(userOf(request).userId, rid(request.params))),
  );

  app.put("/rule/:rid", { config: user, schema: { params: RidParam, body: RuleBody } }, async (request) => {
    await rules.update(userOf(request).userId, rid(request.params), request.body as RuleBody);
    return ok();
  });

  app.delete("/rule/:rid", { config: user, schema: { params: RidParam } }, async (request) => {
    await rules.remove(userOf(request).userId, rid(request.params));
    return ok();
  });

  app.post("/rule/:rid/suspend", { config: user, schema: { params: RidParam } }, async (request) => {
    await rules.suspend(userOf(request).userId, rid(request.params), true);
    return ok();
  });

  app.delete("/rule/:rid/suspend", { config: user, schema: { params: RidParam } }, async (request) => {
    await rules.suspend(userOf(request).userId, rid(request.params), false);
    return ok();
  });
}
