/**
 * `GET /user`: who the credential belongs to, and the server's version. Not in the spec (it has no
 * such route); `blockkit login` checks a token with it and `blockkit status` shows it, as `gh api user`
 * does for GitHub.
 */
import type { FastifyInstance } from "fastify";
import type { UserJson } from "../../protocol/api-types.js";
import { ok } from "../../protocol/envelope.js";
import { BLOCKKIT_VERSION } from "../../protocol/version.js";
import { notFound } from "../errors.js";
import type { Services } from "../services/index.js";
import { userOf } from "./auth.js";
import { doc } from "./openapi/route-doc.js";
import { User } from "../../protocol/responses.js";

export function accountRoutes(app: FastifyInstance, s: Services): void {
  app.get(
    "/user",
    {
      config: { auth: "user" },
      schema: doc({
        tag: "Account",
        summary: "Who this credential belongs to",
        description: "Not in the spec: the user's name, the kind of credential used, and the server's version. `blockkit login` checks a token with it.",
        ok: { 200: { description: "The user.", data: User } },
        errors: { 404: "The user was deleted while the credential was still cached." },
      }),
    },
    async (request) => {
    const principal = userOf(request);
    const row = await s.store.users.byId(principal.userId);
    if (!row) throw notFound(`user ${principal.userId} no longer exists`);
    const body: UserJson = { name: row.name, credential: principal.via, version: BLOCKKIT_VERSION };
    return ok(body);
  });
}
