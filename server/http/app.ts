/** Builds the two fastify instances: the API (REST under /rest/v0, auth pages at the root) and the stream listener. */
import AjvCompiler, { type Options as AjvOptions } from "@fastify/ajv-compiler";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyServerFactory, LogController } from "fastify";
import type { Logger } from "pino";
import { fail } from "../../protocol/envelope.js";
import { badRequest } from "../errors.js";
import type { Services } from "../services/index.js";
import { accountRoutes } from "./account.js";
import type { LimitOptions } from "../services/limits.js";
import { guardedServer } from "./connection-guard.js";
import { countRequests, metricsRoute } from "./metrics.js";
import { installAuth } from "./auth.js";
import { blockEventRoutes } from "./block-events.js";
import { blockRoutes } from "./blocks.js";
import { callbackRoutes } from "./callbacks.js";
import { deviceRoutes } from "./devices.js";
import { clientErrorHandler, installErrorHandling } from "./errors.js";
import { accessTokenRoutes } from "./oauth.js";
import { pageRoutes } from "./pages/index.js";
import { serviceDeviceRoutes } from "./service-devices.js";
import { subDeviceRoutes } from "./subdevices.js";
import { ruleRoutes } from "./rules.js";
import { fileHostAuthRoutes, fileHostRoutes } from "./filehost.js";
import { cameraRoutes } from "./camera.js";
import { streamCors } from "./stream-cors.js";
import { JSON_BODY_LIMIT, REST_PREFIX, SNAPSHOT_BODY_LIMIT } from "./constants.js";
import { FastIngest, type RequestListener } from "./fast-ingest.js";
import { MAX_JSON_DEPTH, SCHEMA_KEYWORDS, nestedDeeperThan } from "./schema-keywords.js";
import { closeRefusedUpgrades, streamRoutes } from "./stream.js";
import { installDocs } from "./openapi/index.js";
import { doc } from "./openapi/route-doc.js";
import { Health } from "../../protocol/responses.js";

export { JSON_BODY_LIMIT, REST_PREFIX, SNAPSHOT_BODY_LIMIT } from "./constants.js";

declare module "fastify" {
  interface FastifyInstance {
    /** The API app's fast lane for block events (its counters are read by tests). */
    fastIngest?: FastIngest;
  }
}

/**
 * The HTTP server fastify would make (fastify.js getServerInstance, HTTP/1 branch), guarded by the
 * server's limits (connection-guard.ts), with an optional lane in front of fastify's request listener.
 */
function serverFactory(s: Services, requestTimeoutMs: (o: LimitOptions) => number, lane?: FastIngest): FastifyServerFactory {
  return (handler, opts) =>
    guardedServer(lane ? lane.listener(handler as RequestListener) : (handler as RequestListener), s.limits, requestTimeoutMs, {
      keepAliveTimeout: opts.keepAliveTimeout as number,
      connectionTimeout: opts.connectionTimeout as number,
      maxRequestsPerSocket: opts.maxRequestsPerSocket as number | undefined,
    });
}

/** The options fastify passes to its validator factory (its `ajv` option). */
type ValidatorOptions = Parameters<ReturnType<typeof AjvCompiler>>[1];

/**
 * fastify's validators (@fastify/ajv-compiler), two of them: query strings and path parameters are
 * text and are coerced to the schema's types (`from=0` is a number); a JSON body is not. Coercion
 * there would take `{"DA": null}` as an empty command, `{"G": true}` as port "true", `{"shortName":
 * ["a"]}` as "a", where the spec gives each field one type: a wrong one is a 400 naming the field.
 */
function validatorsByPart(): ReturnType<typeof AjvCompiler> {
  const pool = AjvCompiler();
  return (externalSchemas, options: ValidatorOptions) => {
    const coercing = pool(externalSchemas, options);
    const customOptions: AjvOptions = { ...(options?.customOptions as AjvOptions | undefined), coerceTypes: false };
    const strict = pool(externalSchemas, { plugins: options?.plugins, onCreate: options?.onCreate, customOptions });
    // fastify calls the compiler with the route's schema and the part it is for (ajv-compiler's own
    // compiler ignores the part); its type in ajv-compiler's declarations is ajv's compile.
    return ((route: { httpPart?: string }) => (route.httpPart === "body" ? strict : coercing)(route as never)) as typeof coercing;
  };
}

/**
 * Why a body the JSON parser refused is refused (fastify's own error names neither): where the
 * syntax fails, or the key the parser refuses in valid JSON (prototype poisoning).
 */
function jsonFault(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return `${(err as Error).message} (not valid JSON)`;
  }
  return 'a "__proto__" key, or "constructor" with "prototype", is refused';
}

function baseFastify(s: Services, log: Logger, bodyLimit: number, factory: FastifyServerFactory): FastifyInstance {
  const proxies = s.settings.trustProxy;
  const app = Fastify({
    loggerInstance: log,
    serverFactory: factory,
    // request.ip, from X-Forwarded-For on a connection from these only (proxy-addr: the rightmost
    // address not itself trusted), so that a client cannot name its own address. Not the
    // connection caps (connection-guard.ts): they act on the socket, before any header is read.
    trustProxy: proxies.length > 0 ? [...proxies] : false,
    // Per-request lines are off: the ingest path is hot, and URLs carry credentials.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit,
    // Old clients send `DELETE` with a JSON content type and no body, or `/path/` with a slash.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 256 },
    return503OnClosing: true,
    clientErrorHandler: clientErrorHandler(s.limits),
    forceCloseConnections: "idle",
    ajv: { customOptions: { coerceTypes: "array", removeAdditional: false, allErrors: false, keywords: SCHEMA_KEYWORDS } },
    schemaController: { compilersFactory: { buildValidator: validatorsByPart() } },
    // Errors raised before routing (a path segment over maxParamLength, bad percent-encoding):
    // fastify answers them with its own JSON shape unless they pass through here.
    frameworkErrors: (err, _request, reply) => {
      const tooLong = err.code === "FST_ERR_MAX_PARAM_LENGTH";
      void (reply as unknown as FastifyReply)
        .code(tooLong ? 414 : 400)
        .send(fail(tooLong ? "a path segment is longer than 256 characters" : "the path is not a valid URL (bad percent-encoding)"));
    },
  }) as unknown as FastifyInstance;
  const jsonParser = app.getDefaultJsonParser("error", "error");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    if (body === "" || (typeof body === "string" && body.trim() === "")) {
      done(null, undefined);
      return;
    }
    if (nestedDeeperThan(body as string, MAX_JSON_DEPTH)) {
      done(badRequest(`malformed JSON body: nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      return;
    }
    void jsonParser(request, body as string, (err, parsed) => {
      if (err) done(badRequest(`malformed JSON body: ${jsonFault(body as string)}`), undefined);
      else done(null, parsed);
    });
  });
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  installErrorHandling(app, bodyLimit, s.storeHealth);
  // Node's server.close() ends only the keep-alive connections idle at that moment. A response
  // finished later (a held poll answered at shutdown) would leave its connection open, and close()
  // waiting, for the whole keep-alive timeout (72 s): end such a connection once it is written.
  let closing = false;
  app.addHook("preClose", (done) => {
    closing = true;
    done();
  });
  app.addHook("onResponse", function endConnectionWhenClosing(request, _reply, done) {
    const socket = request.raw.socket as { end?: () => void } | undefined; // inject()'s mock socket has no end()
    if (closing && typeof socket?.end === "function") socket.end();
    done();
  });
  return app;
}

/**
 * The API listener: REST routes under /rest/v0; pages, OAuth and the API reference at the root.
 * `stream`: the stream listener, whose operations the reference at /docs includes.
 */
export async function buildApiApp(s: Services, stream?: FastifyInstance): Promise<FastifyInstance> {
  // Block events on a cached token skip fastify's per-request machinery (fast-ingest.ts).
  const lane = new FastIngest(s, () => app);
  const app = baseFastify(s, s.log.child({ module: "srv:http" }), JSON_BODY_LIMIT, serverFactory(s, (o) => o.requestTimeoutMs, lane));
  app.addHook("preClose", (done) => {
    lane.close();
    done();
  });
  app.decorate("fastIngest", lane);
  // First: the generator sees only the routes added after it.
  await installDocs(app, { ui: { stream, streamUrl: () => s.settings.publicStreamUrl ?? s.settings.streamUrl } });
  installAuth(app, s);
  closeRefusedUpgrades(app);
  countRequests(app, s);
  metricsRoute(app, s, s.settings.metricsToken);
  const health = doc({
    tag: "Operations",
    summary: "Health",
    description:
      "For probes and load balancers, no credential: 200 while the store writes, 503 while it cannot (disk full, " +
      "database away), with why in `store`. Also the number of held command polls and of block events waiting for " +
      "their commit. The stream listener answers the same at `{stream_url}/healthz`, without those two numbers.",
    ok: {
      200: { description: "Healthy.", body: Health },
      503: { description: "The store cannot write (or the server is shutting down: then the error envelope).", body: Health },
    },
  });
  app.get("/healthz", { schema: health }, async (_request, reply) => {
    const store = s.storeHealth.state();
    // 503 while the store cannot write: a load balancer or a probe sees it without reading the body.
    if (!store.ok) void reply.code(503);
    return { ok: store.ok, status: store.ok ? "ok" : "degraded", store, heldPolls: s.commands.heldPolls, ingestQueue: s.ingest.depth };
  });
  serviceDeviceRoutes(app, s);
  fileHostAuthRoutes(app, s);
  void app.register(
    async (api) => {
      deviceRoutes(api, s);
      callbackRoutes(api, s);
      blockRoutes(api, s);
      blockEventRoutes(api, s);
      subDeviceRoutes(api, s);
      ruleRoutes(api, s);
      fileHostRoutes(api, s);
      accountRoutes(api, s);
      streamRoutes(api, s);
    },
    { prefix: REST_PREFIX },
  );
  // Pages and OAuth at the root ({auth_url}).
  pageRoutes(app, s);
  accessTokenRoutes(app, s);
  return app;
}

/** The stream listener ({stream_url}): camera snapshots. */
export async function buildStreamApp(s: Services): Promise<FastifyInstance> {
  const app = baseFastify(s, s.log.child({ module: "srv:stream" }), SNAPSHOT_BODY_LIMIT, serverFactory(s, (o) => o.uploadTimeoutMs));
  await installDocs(app);
  // Before the auth hook: a refusal carries the headers too, so the reference's page can read it.
  streamCors(app, s);
  installAuth(app, s);
  countRequests(app, s);
  // Documented with the API listener's (one path item cannot hold two listeners' GET).
  app.get("/healthz", { schema: { hide: true } }, async (_request, reply) => {
    const store = s.storeHealth.state();
    if (!store.ok) void reply.code(503);
    return { ok: store.ok, status: store.ok ? "ok" : "degraded", store };
  });
  cameraRoutes(app, s);
  return app;
}
