/**
 * The loopback node:http server the block transport tests send to: routes that echo, answer any
 * status, hang, stop half-way, close, drop the connection or play a block's endpoints, and counts
 * of the connections it accepted. Apart from the tests because the transport suite, the BlockClient
 * suite and the lean HTTP/1.1 transport's tests all send to it; `serveTransportRoutes()` starts it
 * for the calling test file.
 */
import { once } from "node:events";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, afterEach, beforeAll } from "vitest";
import type { BlockTransport } from "../../protocol/transport.js";

let server: Server;
export let base: string;
/** Connections the server accepted, and the requests seen on each. */
export const connections = new Set<Socket>();
export let accepted = 0;
const perSocket = new WeakMap<Socket, number>();
/** The connection of the last /echo request. */
export let lastSocket: Socket | undefined;
/** Requests held open by /hang, answered (or dropped) in afterEach. */
export const held = new Set<ServerResponse>();

export function envelope(res: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
}

function route(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
  const url = new URL(req.url ?? "/", "http://x");
  const n = (perSocket.get(req.socket) ?? 0) + 1;
  perSocket.set(req.socket, n);
  const p = url.pathname;
  if (p === "/echo") {
    lastSocket = req.socket;
    return envelope(res, 200, { method: req.method, headers: req.headers, body: body.toString("base64") });
  }
  if (p.startsWith("/status/")) return envelope(res, Number(p.slice(8)), { result: 0, id: 0, error: `status ${p.slice(8)} asked` });
  if (p.startsWith("/hang")) return void held.add(res);
  if (p === "/half") {
    // Headers and a first chunk, then silence.
    res.writeHead(200, { "content-type": "application/json" });
    res.write('{"DEVICE":');
    return void held.add(res);
  }
  if (p === "/bye") return void res.writeHead(200, { connection: "close", "content-length": 3 }).end("bye");
  if (p === "/big") return void res.writeHead(200).end(Buffer.alloc(4096, 1));
  if (p === "/big-chunked") {
    res.writeHead(200);
    res.write(Buffer.alloc(2048, 1));
    return void setImmediate(() => res.end(Buffer.alloc(2048, 1)));
  }
  // The second request on a connection is dropped unanswered: a kept-alive connection that the
  // server closed just as the request went out.
  if (p === "/drop-second" && n === 2) return void req.socket.destroy();
  if (p === "/drop") return void req.socket.destroy();
  if (p.endsWith("/activate")) return url.searchParams.has("user_access_token") ? envelope(res, 200, { token: "tok-1" }) : void res.writeHead(204).end();
  if (p.endsWith("/commands")) return envelope(res, 200, { DEVICE: [{ G: 0, V: 0, D: 1002, DA: 1, GUID: "g" }, { junk: true }] });
  if (p.endsWith("/data")) {
    if (req.headers["x-service-token"] === "revoked") return envelope(res, 401, { result: 0, id: 0, error: "unknown block token" });
    if (req.headers["x-service-token"] === "forbidden") return envelope(res, 403, { result: 0, id: 0, error: "not your node" });
    const reading = JSON.parse(body.toString("utf8")) as { DA?: string };
    if (reading.DA === "") return envelope(res, 400, { result: 0, id: 0, error: "DA must not be empty" });
    return envelope(res, 200, { result: 1, id: 0, error: null });
  }
  envelope(res, 404, { result: 0, id: 0, error: "no such route" });
}

/** Starts the server before the calling file's tests, drops held requests after each, closes it after all. */
export function serveTransportRoutes(): void {
  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => route(req, res, Buffer.concat(chunks)));
    });
    server.keepAliveTimeout = 30_000;
    server.on("connection", (s: Socket) => {
      accepted++;
      connections.add(s);
      s.on("close", () => connections.delete(s));
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterEach(() => {
    for (const res of held) res.destroy();
    held.clear();
  });

  afterAll(async () => {
    for (const s of connections) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });
}

export const req = (path: string, extra: Partial<Parameters<BlockTransport["send"]>[0]> = {}): Parameters<BlockTransport["send"]>[0] => ({
  method: "GET",
  url: `${base}${path}`,
  headers: {},
  timeoutMs: 5_000,
  ...extra,
});
