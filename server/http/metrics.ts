/**
 * GET /metrics (Prometheus text format) on the API listener, and the count of every answered
 * request by route. Open to loopback clients only, unless a metrics token is configured: then any
 * client with `Authorization: Bearer <token>` (compared in constant time), loopback included.
 * Behind a trusted proxy (--trust-proxy) the client is the one X-Forwarded-For names (request.ip):
 * a remote client through a proxy on this machine is not loopback, whatever it put in the header;
 * and a request from a trusted proxy that forwards no client is not loopback either
 * (client-address.ts), so a direct scrape from this machine needs the token when loopback is trusted.
 */
import type { FastifyInstance } from "fastify";
import { forbidden, unauthorized } from "../errors.js";
import type { Services } from "../services/index.js";
import { isLoopbackAddress } from "../services/networks.js";
import { clientAddress } from "./client-address.js";
import { safeEqual } from "../services/secrets.js";
import { doc } from "./openapi/route-doc.js";

/** The onResponse hook of both listeners: requests by route pattern, method and status. */
export function countRequests(app: FastifyInstance, s: Services): void {
  app.addHook("onResponse", function countRequest(request, reply, done) {
    s.metrics.request(request.routeOptions.url ?? "unmatched", request.method, reply.statusCode);
    done();
  });
}

export function metricsRoute(app: FastifyInstance, s: Services, token: string | undefined): void {
  const schema = doc({
    tag: "Operations",
    summary: "Prometheus metrics",
    description:
      "The server's metrics in Prometheus text format: requests by route, method and status; ingest, commands, rules, " +
      "callbacks, live streams, limits and the process. Open to loopback clients only, unless the server has a metrics " +
      "token (`--metrics-token`): then any client with `Authorization: Bearer <token>`, loopback included. Behind a " +
      "proxy named by `--trust-proxy`, the client is the one the proxy forwards (X-Forwarded-For), not the proxy; a " +
      "request from such a proxy's address that forwards none is not a loopback client (with loopback trusted, scrape " +
      "with the token).",
    ok: { 200: { description: "The metrics.", type: "text/plain" } },
    errors: {
      401: "A metrics token is configured and the request does not carry it.",
      403: "No metrics token is configured and the client is not on loopback (or is unknown: a trusted proxy's request without X-Forwarded-For).",
    },
    security: [{}, { metrics_token: [] }],
  });
  app.get("/metrics", { exposeHeadRoute: false, schema }, async (request, reply) => {
    if (token !== undefined) {
      const given = /^Bearer (.+)$/.exec(request.headers.authorization ?? "")?.[1];
      if (given === undefined || !safeEqual(given, token)) throw unauthorized("metrics need Authorization: Bearer <the metrics token>");
    } else {
      const client = clientAddress(s, request);
      if (client === null) {
        throw forbidden(
          "metrics are served to loopback clients only, and this request came from a trusted proxy's address (--trust-proxy) without " +
            "X-Forwarded-For, so its client is unknown (configure a metrics token to scrape)",
        );
      }
      if (!isLoopbackAddress(client)) throw forbidden("metrics are served to loopback clients only (configure a metrics token to scrape from elsewhere)");
    }
    // Kept at the connection cap from now on (Limits.proveScrape): the operator's view of a full server.
    s.limits.proveScrape(request.raw.socket);
    return reply.type(s.metrics.registry.contentType).send(await s.metrics.registry.metrics());
  });
}
