/** The one place where errors become envelopes (DESIGN.md "Errors"). */
import type { FastifyError, FastifyInstance } from "fastify";
import { fail } from "../../protocol/envelope.js";
import { ServiceError } from "../errors.js";

const FASTIFY_STATUS: Record<string, number> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 413,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 415,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 400,
  FST_ERR_CTP_EMPTY_JSON_BODY: 400,
  FST_ERR_CTP_INVALID_JSON_BODY: 400,
};

function describe(err: FastifyError): { status: number; message: string } {
  if (err instanceof ServiceError) return { status: err.statusCode, message: err.message };
  if (err.validation) {
    return { status: 400, message: `invalid request: ${err.message}` };
  }
  if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE") return { status: 413, message: "request body too large (limit 64 KiB)" };
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

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const { status, message } = describe(err);
    if (status >= 500) request.log.error({ err }, "request failed");
    else request.log.debug({ code: err.code, status, message }, "request refused");
    if (reply.sent || reply.raw.headersSent) return;
    void reply.code(status).send(fail(message));
  });
  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send(fail(`no route ${request.method} ${request.url.split("?")[0]}`));
  });
}
