/**
 * The client's address where it decides what a request may see: GET /metrics without a token
 * (loopback only), the blocks awaiting activation listed and streamed to a user (the same address
 * as the block's). Behind a proxy named by --trust-proxy the client is the one the proxy forwards
 * (request.ip, from X-Forwarded-For). A request on a trusted proxy's connection that forwards no
 * address is not taken for the proxy's own: a proxy on this machine that does not set the header
 * would make every outside client loopback. Such a request has no known client (null): it is not
 * the machine itself and shares no address with anyone. The login limit and the activation holds
 * per address still count it under the proxy's address (request.ip): a budget, not a permission.
 */
import type { FastifyRequest } from "fastify";
import type { Services } from "../services/index.js";

/** request.ip, or null when the connection is a trusted proxy's and the request forwards no client. */
export function clientAddress(s: Services, request: FastifyRequest): string | null {
  if (s.settings.trustProxy.length === 0) return request.ip;
  const peer = request.raw.socket?.remoteAddress ?? "";
  // request.ips: the connection's address, then X-Forwarded-For's from the right while trusted.
  if (s.settings.fromTrustedProxy(peer) && request.ips !== undefined && request.ips.length < 2) return null;
  return request.ip;
}
