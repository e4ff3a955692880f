/**
 * The fast lane for block events: `POST /rest/v0/block/:nodeId/{data,heartbeat,config}` with a
 * cached block token and a body that is plainly valid is answered here, on node:http, without
 * fastify's per-request machinery (request and reply objects, hooks, the body parser pipeline,
 * the per-request logger). That machinery cost more per event than everything the event itself
 * needs; the ingest benchmark is this route.
 *
 * The lane only ever takes requests whose answer it is sure to give exactly as the routes of
 * block-events.ts would, and gives everything else to fastify:
 *  - before the body is read (synchronously, nothing consumed): any other method or path, a query
 *    string, a content type other than `application/json`, no Content-Length or one over the body
 *    limit, a token not in the store's read cache or not this node's, an empty rate-limit bucket,
 *    a server that is closing: the request goes to fastify untouched;
 *  - after the body is read: a body that is not JSON, that mentions `__proto__`/`constructor`
 *    (fastify refuses prototype poisoning), or that a strict, non-coercing check of the route's
 *    schema refuses: the request is replayed through fastify (`inject`) with the same method, URL,
 *    headers and body, and fastify's answer (the envelope with its message) is sent. The strict
 *    check accepts a subset of what the route's ajv validation accepts (it coerces nothing and
 *    counts string lengths in UTF-16 units, takes V and D as JSON numbers only and refuses nothing
 *    deeper than MAX_JSON_DEPTH), so a body it passes is one fastify passes unchanged.
 * A test compares the two paths' answers over a corpus of good and bad bodies.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { FastifyInstance } from "fastify";
import { fail, ok } from "../../protocol/envelope.js";
import { type DataEvent as DataEventBody, StrictEvents } from "../../protocol/payloads.js";
import { ServiceError, storeFailure } from "../errors.js";
import type { BlockPrincipal } from "../services/auth.js";
import type { Services } from "../services/index.js";
import type { IngestEvent } from "../store/types.js";
import { NODE_ID_SOURCE } from "../../protocol/guid.js";
import { JSON_BODY_LIMIT, REST_PREFIX } from "./constants.js";
import { blockToken } from "./auth.js";
import { toEvent } from "./block-events.js";
import { MAX_JSON_DEPTH, nestedDeeperThan } from "./schema-keywords.js";

type Kind = IngestEvent["kind"];
export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

const ROUTE = new RegExp(`^${REST_PREFIX}/block/(${NODE_ID_SOURCE})/(data|heartbeat|config)$`);
const CHECKS = {
  data: TypeCompiler.Compile(StrictEvents.DataEvent),
  heartbeat: TypeCompiler.Compile(StrictEvents.HeartbeatBody),
  config: TypeCompiler.Compile(StrictEvents.ConfigEvent),
} as const;
const OK_BODY = JSON.stringify(ok());
const JSON_TYPE = "application/json; charset=utf-8";
/** The headers of every acknowledgement (writeHead reads them, never changes them). */
const OK_HEADERS: Readonly<Record<string, string | number>> = { "content-type": JSON_TYPE, "content-length": Buffer.byteLength(OK_BODY) };
/** The routes' patterns as fastify names them (metrics labels). */
const ROUTE_PATTERN: Record<Kind, string> = {
  data: `${REST_PREFIX}/block/:nodeId/data`,
  heartbeat: `${REST_PREFIX}/block/:nodeId/heartbeat`,
  config: `${REST_PREFIX}/block/:nodeId/config`,
};
/** Response headers of an injected answer that describe the connection, not the answer. */
const HOP_HEADERS = new Set(["connection", "keep-alive", "transfer-encoding", "date"]);

/**
 * The API app's hooks on the block-event routes, each of which this lane does itself: a hook added
 * to the app must be mirrored here too (a test compares this list with the app's routes).
 * - onRequest `authenticate`: the block token from the cache (`cachedBlock`) and the rate limit
 *   (`tryTake`); anything else (no cached token, an empty bucket) goes to fastify.
 * - onResponse `endConnectionWhenClosing`: `connection: close` on every answer once closing.
 * - onResponse `storeWroteOn2xx`: the store is healthy again after a committed event (`wrote()`).
 * - onResponse `closeRefusedUpgrade`: nothing to do, a block event is never an upgrade (Node hands
 *   an `Upgrade:` request to the WebSocket server, not to this listener).
 * - onResponse `countRequest`: the answer counted in the metrics under the route's pattern.
 */
export const MIRRORED_HOOKS: Readonly<Record<string, readonly string[]>> = {
  onRequest: ["authenticate"],
  onResponse: ["storeWroteOn2xx", "endConnectionWhenClosing", "closeRefusedUpgrade", "countRequest"],
};

export class FastIngest {
  private closing = false;
  /** Counters for tests: requests answered here, handed to fastify before and after the body. */
  readonly stats = { taken: 0, passed: 0, replayed: 0 };

  constructor(
    private readonly s: Services,
    /** Resolves the app lazily: the app is built with this lane's listener in its server. */
    private readonly app: () => FastifyInstance,
  ) {}

  /** From now on every request goes to fastify (which answers 503 while closing). */
  close(): void {
    this.closing = true;
  }

  /** Wraps fastify's request listener. */
  listener(next: RequestListener): RequestListener {
    return (req, res) => {
      if (!this.take(req, res)) {
        this.stats.passed++;
        next(req, res);
      }
    };
  }

  private take(req: IncomingMessage, res: ServerResponse): boolean {
    if (this.closing || req.method !== "POST" || req.url === undefined) return false;
    const m = ROUTE.exec(req.url);
    if (!m) return false;
    const h = req.headers;
    const type = h["content-type"];
    if (type !== "application/json" && !type?.startsWith("application/json;")) return false;
    if (h["transfer-encoding"] !== undefined || h["content-length"] === undefined) return false;
    const length = Number(h["content-length"]);
    if (!(length > 0 && length <= JSON_BODY_LIMIT)) return false;
    // The same header rule as the routes' auth hook (X-Service-Token, or its alias X-Ninja-Token).
    const token = blockToken(h);
    if (token === undefined) return false;
    const principal = this.s.auth.cachedBlock(token, m[1] as string);
    // Authenticated, as in the auth hook: not evicted at the connection cap, and counted in the
    // block's share of connections (Limits.proveBlock). Past the share, or with an empty bucket:
    // fastify answers the 429 and counts the limit (not reported here too).
    if (!principal || !this.s.limits.proveBlock(req.socket, principal.nodeId, false)) return false;
    if (!this.s.rateLimiter.tryTake(principal.tokenHash, false)) return false;
    const kind = m[2] as Kind;
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => this.handle(req, res, kind, principal, chunks.length === 1 ? (chunks[0] as Buffer).toString() : Buffer.concat(chunks).toString()));
    return true;
  }

  private handle(req: IncomingMessage, res: ServerResponse, kind: Kind, principal: BlockPrincipal, text: string): void {
    let body: unknown;
    try {
      if (text.includes("__proto__") || text.includes("constructor")) throw new Error("replay");
      if (nestedDeeperThan(text, MAX_JSON_DEPTH)) throw new Error("replay");
      body = JSON.parse(text);
    } catch {
      this.replay(req, res, principal, text);
      return;
    }
    if (!CHECKS[kind].Check(body)) {
      this.replay(req, res, principal, text);
      return;
    }
    this.stats.taken++;
    const now = this.s.clock();
    const events =
      kind === "heartbeat"
        ? (body as DataEventBody[]).map((e) => toEvent(principal, kind, e, now))
        : [toEvent(principal, kind, body as DataEventBody, now)];
    this.s.ingest.submit(events).then(
      () => {
        this.s.storeHealth.wrote();
        this.send(res, 200, OK_BODY, kind);
      },
      (err: unknown) => {
        const store = storeFailure(err);
        if (store) this.s.storeHealth.failed(store);
        if (err instanceof ServiceError) {
          this.send(res, err.statusCode, JSON.stringify(fail(err.message)), kind);
          return;
        }
        this.s.log.error({ err }, "ingest failed on the fast lane");
        this.send(res, 500, JSON.stringify(fail("internal error")), kind);
      },
    );
  }

  private send(res: ServerResponse, status: number, body: string, kind: Kind | null): void {
    if (kind) this.s.metrics.request(ROUTE_PATTERN[kind], "POST", status);
    if (res.destroyed) return;
    if (body === OK_BODY && !this.closing) {
      res.writeHead(status, OK_HEADERS);
      res.end(body);
      return;
    }
    const headers: Record<string, string | number> = { "content-type": JSON_TYPE, "content-length": Buffer.byteLength(body) };
    // Closing: end the connection with this answer rather than keep it for another request.
    if (this.closing) headers.connection = "close";
    res.writeHead(status, headers);
    res.end(body);
  }

  /**
   * Answers through fastify's full path, with the body already read. Fastify's `authenticate`
   * charges the rate limit again, so the lane gives back the request it took.
   */
  private replay(req: IncomingMessage, res: ServerResponse, principal: BlockPrincipal, text: string): void {
    this.stats.replayed++;
    this.s.rateLimiter.giveBack(principal.tokenHash);
    this.app()
      .inject({ method: "POST", url: req.url as string, headers: req.headers, payload: text })
      .then(
        (answer) => {
          if (res.destroyed) return;
          for (const [name, value] of Object.entries(answer.headers)) {
            if (value !== undefined && !HOP_HEADERS.has(name)) res.setHeader(name, value);
          }
          if (this.closing) res.setHeader("connection", "close");
          res.writeHead(answer.statusCode);
          res.end(answer.rawPayload);
        },
        (err: unknown) => {
          this.s.log.error({ err }, "replaying a block event through fastify failed");
          this.send(res, 500, JSON.stringify(fail("internal error")), null);
        },
      );
  }
}
