/**
 * The node:http servers of both listeners, with the limits of services/limits.ts: time for headers
 * and for a whole request (a slow body is answered 408 and closed), connections per address and in
 * total over both listeners (a connection over a cap is reset at once, before it costs a request;
 * at the total cap the oldest connection not yet proven is reset instead, and a connection from the
 * machine itself may take a place of the metrics reserve, which serves /metrics and /healthz only).
 */
import { type IncomingMessage, type RequestListener, type Server, type ServerResponse, createServer } from "node:http";
import type { Socket } from "node:net";
import { fail } from "../../protocol/envelope.js";
import type { LimitOptions, Limits } from "../services/limits.js";

/**
 * Connections the kernel may keep waiting to be accepted (listen(2) backlog; Linux caps it at
 * net.core.somaxconn, 4096 by default since 5.4). Node's default, 511, fills within a 64 ms pause
 * of the event loop under a flood of 8,000 refused connections a second, and a normal client's
 * connection attempt then waits a second for its SYN to be sent again (bench/limits.bench.ts).
 */
export const LISTEN_BACKLOG = 4096;

/** How often node:http checks the header and request timeouts, ms (its default, 30 s, lets a 10 s timeout run to 40). */
const TIMEOUT_CHECK_MS = 1000;

export interface ServerTimeouts {
  keepAliveTimeout: number;
  connectionTimeout: number;
  maxRequestsPerSocket?: number;
}

/** A node:http server for fastify's `serverFactory`, guarded by `limits`. */
export function guardedServer(
  listener: RequestListener,
  limits: Limits,
  requestTimeoutMs: (o: LimitOptions) => number,
  timeouts: ServerTimeouts,
): Server {
  const o = limits.options;
  const server = createServer({ connectionsCheckingInterval: TIMEOUT_CHECK_MS }, (req, res) => {
    if (limits.inReserve(req.socket) && !reserveMay(req)) refuseInReserve(res);
    else listener(req, res);
  });
  // A client that half-closes right after its request (the Arduino Ethernet block library does,
  // without reading the answer) has that request aborted by Node unless this is set
  // (socketOnEnd in lib/_http_server.js): the reading would be lost. With it, the answer is
  // written and then the socket is closed.
  (server as unknown as { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.keepAliveTimeout = timeouts.keepAliveTimeout;
  const request = requestTimeoutMs(o);
  // node:http requires headersTimeout <= requestTimeout when both are set.
  server.requestTimeout = request;
  server.headersTimeout = request > 0 ? Math.min(o.headersTimeoutMs, request) : o.headersTimeoutMs;
  server.setTimeout(timeouts.connectionTimeout);
  if (timeouts.maxRequestsPerSocket && timeouts.maxRequestsPerSocket > 0) server.maxRequestsPerSocket = timeouts.maxRequestsPerSocket;
  // A connection over a cap is refused before node:http sets it up (its parser, timers and list
  // of connections): under a connect flood refusals are most of the work. It is reset (RST), not
  // closed: the peer learns at once, and the server keeps no TIME_WAIT entry per refusal. At the
  // total cap, the oldest connection not yet proven (no request authenticated on it, auth.ts) is
  // reset instead to make room (Limits.admit).
  const setUp = server.listeners("connection") as ((socket: Socket) => void)[];
  server.removeAllListeners("connection");
  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress ?? "";
    const release = (): void => limits.release(socket);
    const evict = (): void => {
      release();
      socket.resetAndDestroy();
    };
    if (!limits.admit(address, socket, evict)) {
      socket.resetAndDestroy();
      return;
    }
    socket.once("close", release);
    for (const l of setUp) l.call(server, socket);
  });
  return server;
}

/** What a connection of the metrics reserve may ask: the operator's view of a full server. */
function reserveMay(req: IncomingMessage): boolean {
  if (req.method !== "GET") return false;
  const path = req.url?.split("?")[0];
  return path === "/metrics" || path === "/healthz";
}

/** Any other request on a reserve connection: 503 with the envelope, and the connection closed. */
function refuseInReserve(res: ServerResponse): void {
  const body = JSON.stringify(fail("the server is at its connection cap; this connection was admitted for GET /metrics and GET /healthz only: retry later"));
  res.shouldKeepAlive = false;
  res.writeHead(503, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) });
  res.end(body);
}
