/**
 * Authentication hooks. A route declares `config: { auth: "user" | "block" }`; the onRequest hook
 * resolves the credential before the body is read, so an unauthenticated request is refused
 * without parsing it, and applies the per-credential rate limit.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { isNodeId } from "../../protocol/guid.js";
import { ServiceError, badRequest } from "../errors.js";
import type { BlockPrincipal, UserPrincipal } from "../services/auth.js";
import type { Services } from "../services/index.js";
import { resolveUser } from "./session-auth.js";

declare module "fastify" {
  interface FastifyContextConfig {
    auth?: "user" | "block" | "none";
  }
  interface FastifyRequest {
    principal: UserPrincipal | null;
    blockPrincipal: BlockPrincipal | null;
  }
}

/**
 * The block token of a request: header `X-Service-Token`, or `X-Ninja-Token`, the original Ninja
 * Blocks platform's name for the same header, which its unmodified clients (the Arduino Ethernet
 * block library among them) send. X-Service-Token wins when both are given.
 */
export function blockToken(headers: IncomingHttpHeaders): string | undefined {
  const service = headers["x-service-token"];
  if (typeof service === "string" && service !== "") return service;
  const ninja = headers["x-ninja-token"];
  return typeof ninja === "string" && ninja !== "" ? ninja : undefined;
}

/**
 * A client that can take only one short command per poll answer: the original Arduino Ethernet
 * block library (User-Agent `Ninja Arduino 1.1`, `1.2` in later copies). It reads at most 128
 * bytes of the body and parses only the first command by string matching. Recognised by its
 * User-Agent because nothing else in its requests tells it apart (the original node clients send
 * X-Ninja-Token too and take whole batches), and it cannot be changed on boards in the field.
 */
export function isConstrainedClient(headers: IncomingHttpHeaders): boolean {
  const ua = headers["user-agent"];
  return typeof ua === "string" && /^Ninja Arduino\b/i.test(ua);
}

export function installAuth(app: FastifyInstance, s: Services): void {
  app.decorateRequest("principal", null);
  app.decorateRequest("blockPrincipal", null);
  // A client that authenticated: its connection is proven, no longer the first evicted at the
  // connection cap (Limits.admit), so a flood of connections that never get this far cannot keep
  // it out; and it counts in its user's or its block's share of connections, so that one
  // credential cannot fill the cap with proven ones either. Past the share: 429, connection closed.
  app.addHook("onRequest", async function authenticate(request, reply) {
    const mode = request.routeOptions.config.auth;
    const socket = request.raw.socket;
    if (mode === "user") {
      const principal = await resolveUser(s, request);
      request.principal = principal;
      if (!s.limits.proveUser(socket, principal.userId)) {
        throw tooManyConnections(reply, `this account's credentials hold ${s.limits.options.maxConnectionsPerUser} connections already`);
      }
      s.rateLimiter.take(principal.tokenHash);
    } else if (mode === "block") {
      const nodeId = (request.params as { nodeId?: string }).nodeId ?? "";
      if (!isNodeId(nodeId)) throw badRequest(`node id "${nodeId}" is not 12 to 64 alphanumeric characters`);
      const principal = await s.auth.block(blockToken(request.headers), nodeId);
      request.blockPrincipal = principal;
      if (!s.limits.proveBlock(socket, principal.nodeId)) {
        throw tooManyConnections(reply, `block ${principal.nodeId} holds ${s.limits.options.maxConnectionsPerBlock} connections already`);
      }
      s.rateLimiter.take(principal.tokenHash);
    }
  });
}

/**
 * Retry-After of a 429 past a share of connections, whole seconds. A place in the share is freed
 * only when the client closes one of its connections: the server closes none of them early (a held
 * poll keeps its connection for the next one; an idle one lives fastify's keep-alive timeout,
 * 72 s), but clients close their idle kept-alive connections after 4 s (undici's default
 * keepAliveTimeout) or 5 s (Node's http.Agent). So 5 s is the first time a retry is likely to find
 * room; a sooner one only opens another connection to be refused and closed.
 */
const CONNECTION_SHARE_RETRY_AFTER_S = 5;

/** The 429 of a request past its credential's share of connections; the connection is closed after it. */
function tooManyConnections(reply: FastifyReply, why: string): ServiceError {
  reply.raw.shouldKeepAlive = false;
  return new ServiceError("RATE_LIMITED", `too many connections: ${why}; close one or retry later`, { retryAfterS: CONNECTION_SHARE_RETRY_AFTER_S });
}

export function userOf(request: FastifyRequest): UserPrincipal {
  if (!request.principal) throw new Error("route without auth: 'user' asked for the user");
  return request.principal;
}

export function blockOf(request: FastifyRequest): BlockPrincipal {
  if (!request.blockPrincipal) throw new Error("route without auth: 'block' asked for the block");
  return request.blockPrincipal;
}
