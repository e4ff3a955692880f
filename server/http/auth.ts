/**
 * Authentication hooks. A route declares `config: { auth: "user" | "block" }`; the onRequest hook
 * resolves the credential before the body is read, so an unauthenticated request is refused
 * without parsing it, and applies the per-credential rate limit.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { isNodeId } from "../../protocol/guid.js";
import { badRequest } from "../errors.js";
import type { BlockPrincipal, UserPrincipal } from "../services/auth.js";
import type { Services } from "../services/index.js";

declare module "fastify" {
  interface FastifyContextConfig {
    auth?: "user" | "block" | "none";
  }
  interface FastifyRequest {
    principal: UserPrincipal | null;
    blockPrincipal: BlockPrincipal | null;
  }
}

export function installAuth(app: FastifyInstance, s: Services): void {
  app.decorateRequest("principal", null);
  app.decorateRequest("blockPrincipal", null);
  app.addHook("onRequest", async (request) => {
    const mode = request.routeOptions.config.auth;
    if (mode === "user") {
      request.principal = await s.auth.user(request.query as Record<string, unknown>);
      s.rateLimiter.take(request.principal.tokenHash);
    } else if (mode === "block") {
      const nodeId = (request.params as { nodeId?: string }).nodeId ?? "";
      if (!isNodeId(nodeId)) throw badRequest(`node id "${nodeId}" is not 12 or more alphanumeric characters`);
      const header = request.headers["x-service-token"];
      request.blockPrincipal = await s.auth.block(typeof header === "string" ? header : undefined, nodeId);
      s.rateLimiter.take(request.blockPrincipal.tokenHash);
    }
  });
}

export function userOf(request: FastifyRequest): UserPrincipal {
  if (!request.principal) throw new Error("route without auth: 'user' asked for the user");
  return request.principal;
}

export function blockOf(request: FastifyRequest): BlockPrincipal {
  if (!request.blockPrincipal) throw new Error("route without auth: 'block' asked for the block");
  return request.blockPrincipal;
}
