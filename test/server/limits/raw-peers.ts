/**
 * Raw TCP clients and servers of the connection-limit tests: a server on loopback with the given
 * limits, and peers from any 127.0.0.0/8 address that send bytes and keep their socket. Call
 * `closeAll` in afterEach: it destroys every peer and stops every server.
 */
import { type Socket, connect } from "node:net";
import { Writable } from "node:stream";
import pino from "pino";
import type { LimitOptions } from "../../../server/services/limits.js";
import { type TestServer, startTestServer } from "../../helpers/server.js";

export interface Peer {
  socket: Socket;
  /** Everything the server sent. */
  text: () => string;
  /** The code of the socket's error, if it had one (ECONNRESET: the server reset it). */
  error: () => string | undefined;
  closed: Promise<void>;
  isClosed: () => boolean;
}

let servers: TestServer[] = [];
export let peers: Peer[] = [];

export async function closeAll(): Promise<void> {
  for (const p of peers) p.socket.destroy();
  peers = [];
  await Promise.all(servers.map((t) => t.close()));
  servers = [];
}

export async function server(limits: Partial<LimitOptions>, logLines?: string[]): Promise<{ t: TestServer; port: number }> {
  const logger = logLines
    ? pino({ level: "warn" }, new Writable({ write: (chunk: Buffer, _e, done) => (logLines.push(chunk.toString()), done()) }))
    : pino({ level: "silent" });
  const t = await startTestServer({ limits, logger, pollHoldSeconds: 30 }, { listen: true });
  servers.push(t);
  return { t, port: new URL(t.baseUrl as string).port as unknown as number };
}

/**
 * A raw TCP client from `from` (any 127.0.0.0/8 address) that sends `data` and keeps the socket.
 * A connection reset at accept may fail before 'connect' is seen: that peer resolves closed.
 */
export function peer(port: number, data: string, from = "127.0.0.1"): Promise<Peer> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port, localAddress: from });
    let text = "";
    let closed = false;
    let error: string | undefined;
    const done = new Promise<void>((r) => socket.once("close", () => ((closed = true), r())));
    const p = { socket, text: () => text, error: () => error, closed: done, isClosed: () => closed };
    socket.on("data", (c: Buffer) => (text += c.toString()));
    socket.on("error", (err: NodeJS.ErrnoException) => (error = err.code));
    socket.once("connect", () => {
      if (data) socket.write(data);
      peers.push(p);
      resolve(p);
    });
    void done.then(() => resolve(p));
  });
}

/** A plain GET /healthz on a connection of its own; resolves with the status line. */
export async function healthz(port: number, from = "127.0.0.1"): Promise<string> {
  const p = await peer(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", from);
  await p.closed;
  return p.text().split("\r\n")[0] ?? "";
}

export const slowBody = (path: string): string =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 60000\r\n\r\nusername=a`;
