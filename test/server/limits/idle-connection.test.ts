/**
 * A connection that sent nothing before the headers timeout is closed without a 408. A kept-alive
 * client (undici, the simulator's fleet) that opened it for a call which then went elsewhere writes
 * its next request on it whenever it likes: a 408 waiting there is read as the answer to that
 * request, which was never late (the fleet saw thousands of `poll_http_408` past the connection
 * cap, docs/simulator-benchmark.md). A request begun and not finished in time is still answered 408.
 */
import { type Socket, connect } from "node:net";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type TestServer, startTestServer } from "../../helpers/server.js";

let server: TestServer | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await server?.close();
  server = undefined;
});

/** A raw connection that reads nothing until told (a kept-alive client's idle connection). */
async function idle(port: number, first = ""): Promise<{ socket: Socket; received: () => Promise<string> }> {
  const socket = connect({ host: "127.0.0.1", port });
  sockets.push(socket);
  socket.on("error", () => undefined);
  await new Promise<void>((r) => socket.once("connect", () => r()));
  if (first) socket.write(first);
  socket.pause();
  let text = "";
  const closed = new Promise<void>((r) => socket.once("close", () => r()));
  return {
    socket,
    received: async () => {
      socket.on("data", (c: Buffer) => (text += c.toString()));
      socket.resume();
      await closed;
      return text;
    },
  };
}

describe("connections past the headers timeout", () => {
  it("one that sent nothing is closed without an answer; a request written on it then gets no 408", async () => {
    server = await startTestServer({ limits: { headersTimeoutMs: 300, requestTimeoutMs: 600 }, logger: pino({ level: "silent" }) }, { listen: true });
    const port = Number(new URL(server.baseUrl as string).port);
    const limits = server.server.services.limits;
    const quiet = await idle(port);
    const begun = await idle(port, "GET /healthz HTTP/1.1\r\nHost: x\r\n");
    // Both timed out (the server checks every second).
    await vi.waitFor(() => expect(limits.hits.get("request_timeout")).toBe(2), { timeout: 5000, interval: 50 });
    // The client takes its idle connection for a request, as undici does, before it reads.
    quiet.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    const answer = await quiet.received();
    expect(answer).not.toMatch(/408/);
    expect(answer).toBe("");
    // The request that was begun and not finished is answered 408 with the envelope, as before.
    const late = await begun.received();
    expect(late).toMatch(/^HTTP\/1\.1 408 /);
    expect(late).toContain('"result":0');
  });
});
