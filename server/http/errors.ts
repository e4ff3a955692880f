/** The one place where errors become envelopes (DESIGN.md "Errors"). */
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Limits } from "../services/limits.js";
import { fail } from "../../protocol/envelope.js";
import { ServiceError, storeBusy, storeBusyUnavailable, storeFailure, storeUnavailable } from "../errors.js";
import type { StoreHealth } from "../services/store-health.js";

const FASTIFY_STATUS: Record<string, number> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 413,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 415,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 400,
  FST_ERR_CTP_EMPTY_JSON_BODY: 400,
  FST_ERR_CTP_INVALID_JSON_BODY: 400,
};

/**
 * One sentence per field from ajv's errors. A union reports one error per branch ("must be string,
 * must be integer, must match a schema in anyOf"; seven "must be equal to constant" for an enum of
 * literals): fold those into "must be string or integer" and "must be one of a, b, c".
 */
function validationMessage(err: FastifyError): string {
  const context = err.validationContext ?? "request";
  const fields = new Map<string, { types: string[]; values: unknown[]; other: string[] }>();
  for (const v of err.validation ?? []) {
    const path = `${context}${v.instancePath}`;
    let f = fields.get(path);
    if (!f) {
      f = { types: [], values: [], other: [] };
      fields.set(path, f);
    }
    const params = v.params as { type?: string; allowedValue?: unknown; allowedValues?: unknown[] };
    if (v.keyword === "type" && params.type) f.types.push(params.type);
    else if (v.keyword === "const") f.values.push(params.allowedValue);
    else if (v.keyword === "enum") f.values.push(...(params.allowedValues ?? []));
    else if (v.keyword !== "anyOf" && v.message) f.other.push(v.message);
  }
  const parts: string[] = [];
  for (const [path, f] of fields) {
    if (f.other.length > 0) parts.push(`${path} ${[...new Set(f.other)].join(", ")}`);
    else if (f.values.length > 0) parts.push(`${path} must be one of ${f.values.map(String).join(", ")}`);
    else if (f.types.length > 0) parts.push(`${path} must be ${[...new Set(f.types)].join(" or ")}`);
  }
  return `invalid request: ${parts.length > 0 ? parts.join("; ") : err.message}`;
}

/** A byte count as people write limits: "64 KiB", "10 MiB". */
function size(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MiB` : `${bytes / 1024} KiB`;
}

function describe(err: FastifyError, bodyLimit: number): { status: number; message: string } {
  if (err instanceof ServiceError) return { status: err.statusCode, message: err.message };
  if (err.validation) {
    return { status: 400, message: validationMessage(err) };
  }
  if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE") return { status: 413, message: `request body too large (limit ${size(bodyLimit)})` };
  if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    return { status: 415, message: "unsupported Content-Type: send application/json" };
  }
  if (err instanceof SyntaxError || err.code === "FST_ERR_CTP_INVALID_JSON_BODY") {
    return { status: 400, message: `malformed JSON body: ${err.message}` };
  }
  const status = (err.code && FASTIFY_STATUS[err.code]) || err.statusCode;
  if (status && status >= 400 && status < 500) return { status, message: err.message };
  return { status: 500, message: "internal error" };
}

/** Most of a refused body that is read and thrown away so that its sender can read the answer. */
const DRAIN_LIMIT = 16 * 1024 * 1024;

/**
 * fastify answers a body over the limit with `Connection: close` and never reads the rest. Closing
 * a socket with unread data makes the kernel reset it, and a client still sending (any client
 * posting a body of a few MB) fails with EPIPE/ECONNRESET instead of reading the answer. Keep the
 * connection and discard the rest of the body instead, up to DRAIN_LIMIT bytes. The same for any
 * refusal before the body was read (401, 415, 429 on a snapshot upload).
 */
function drainRefusedBody(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  if (raw.readableEnded || typeof raw.resume !== "function") return; // inject() bodies are already read
  reply.removeHeader("connection");
  let drained = 0;
  raw.on("data", (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_LIMIT) raw.socket?.destroy();
  });
  raw.resume();
}

export function installErrorHandling(app: FastifyInstance, bodyLimit: number, health?: StoreHealth): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    // A store that cannot write is a 503 with the same message everywhere, whatever the route.
    const store = storeFailure(err);
    if (store) health?.failed(store);
    // A store that could not take its lock in time is sound: a 503 to retry, the store not degraded.
    const plain = !(err instanceof ServiceError);
    const busy = plain && !store ? storeBusy(err) : null;
    let answer: FastifyError = err;
    if (plain && store) answer = storeUnavailable(store.code, err) as unknown as FastifyError;
    else if (busy) answer = storeBusyUnavailable(busy.code, err) as unknown as FastifyError;
    const { status, message } = describe(answer, bodyLimit);
    if (busy) request.log.warn({ code: busy.code, url: request.routeOptions.url }, "the store was busy: answered 503");
    // A 504 is a peer that did not answer in time (a camera's block): news, not a failure of ours.
    if (status === 504) request.log.info({ code: err.code, status, message }, "request timed out");
    else if (status >= 500 && !busy) request.log.error({ err }, "request failed");
    else request.log.debug({ code: err.code, status, message }, "request refused");
    if (reply.sent || reply.raw.headersSent) return;
    if (status === 413 || (status >= 400 && status < 500 && !request.raw.complete)) drainRefusedBody(request, reply);
    if (answer instanceof ServiceError && answer.retryAfterS !== undefined) void reply.header("retry-after", String(answer.retryAfterS));
    void reply.code(status).send(fail(message));
  });
  if (health) {
    app.addHook("onResponse", function storeWroteOn2xx(request, reply, done) {
      // A write answered 2xx was committed: the store writes again.
      if (reply.statusCode < 300 && request.method !== "GET" && request.method !== "HEAD") health.wrote();
      done();
    });
  }
  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send(fail(`no route ${request.method} ${request.url.split("?")[0]}`));
  });
}

/** Answers of node:http's parser errors (before any route): status and the envelope's text. */
const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, "Request Header Fields Too Large", "request headers too large (limit 16 KiB in all)"],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "Request Timeout", "request timed out: the headers and the body did not arrive in time"],
};

/**
 * fastify's `clientErrorHandler`: node:http reports a request it cannot parse (headers over the
 * limit, a request not received in time, bad framing) here, before fastify sees it. Answer with the
 * envelope, like every other refusal, then close the connection (its framing can't be trusted).
 */
export function clientErrorHandler(limits: Limits) {
  return function onClientError(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
    if (err.code === "ECONNRESET" || socket.destroyed) return;
    const [status, reason, message] = CLIENT_ERRORS[err.code ?? ""] ?? [400, "Bad Request", "malformed HTTP request"];
    if (status === 408) limits.bit("request_timeout", { address: socket.remoteAddress });
    else this.log.debug({ code: err.code, status }, "client error");
    // A connection that sent nothing at all (headers timeout before a first byte) is closed as an
    // idle kept-alive one is, without a 408: a kept-alive client that opened it for a call which
    // went elsewhere may write a request on it at any moment and would read the 408 as that
    // request's answer (the simulator's polls did, thousands of times, past the connection cap).
    if (status === 408 && socket.bytesRead === 0) {
      socket.destroy();
      return;
    }
    if (socket.writable) {
      const body = JSON.stringify(fail(message));
      socket.write(
        `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}
