/**
 * The simulator's lean HTTP/1.1 transport (simulator/transport/http1-transport.ts) beyond the
 * shared transport suite (test/protocol/transport.test.ts): connection reuse and queueing, sending
 * again after a stale connection, destroy() and close(), pipelining, and answers framed every way
 * by a raw TCP server. Apart because it tests this one transport's own behaviour.
 */
import { once } from "node:events";
import type { ServerResponse } from "node:http";
import { type AddressInfo, type Server as NetServer, type Socket, createServer as createNetServer } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { TransportResponse } from "../../../protocol/transport.js";
import { Http1Transport } from "../../../simulator/transport/http1-transport.js";
import { accepted, envelope, held, req, serveTransportRoutes } from "../../helpers/transport-server.js";
import { waitFor } from "../../helpers/wait.js";

serveTransportRoutes();

describe("lean HTTP/1.1 transport", () => {
  let t: Http1Transport;
  afterEach(async () => {
    await t.close();
  });

  it("reuses its connections and opens no more than asked, queueing the rest in order", async () => {
    t = new Http1Transport({ connections: 2 });
    const before = accepted;
    for (let i = 0; i < 5; i++) expect((await t.send(req("/echo"))).status).toBe(200);
    expect(accepted - before).toBe(1);
    // Two held calls take both connections; the next calls wait for one and go in order.
    const hung = [t.send(req("/hang", { timeoutMs: 30_000 })), t.send(req("/hang", { timeoutMs: 30_000 }))];
    await waitFor("two requests held", () => held.size === 2, 5_000);
    const order: number[] = [];
    const queued = [0, 1, 2].map((i) => t.send(req("/echo", { method: "POST", body: String(i) })).then(() => order.push(i)));
    expect(t.stats()).toMatchObject({ open: 2, queued: 3 });
    for (const res of held) envelope(res, 200, { result: 1 });
    held.clear();
    await Promise.all([...hung, ...queued]);
    expect(order).toEqual([0, 1, 2]);
    expect(t.stats()).toMatchObject({ open: 2, queued: 0 });
  });

  it("sends a request again on a fresh connection when a kept-alive one was closed under it, once", async () => {
    t = new Http1Transport({ connections: 1 });
    const before = accepted;
    expect((await t.send(req("/drop-second"))).status).toBe(404);
    expect((await t.send(req("/drop-second"))).status).toBe(404);
    expect(accepted - before).toBe(2);
    // A first request on a fresh connection that is dropped fails: nothing to blame on staleness.
    await expect(t.send(req("/drop"))).rejects.toThrow(/closed before the answer/);
  });

  it("never sends a request twice that may not reach the server twice (a snapshot upload)", async () => {
    t = new Http1Transport({ connections: 1 });
    const upload = { method: "POST" as const, body: Uint8Array.from([0xff, 0xd8]), headers: { "content-type": "image/jpeg" } };
    const before = accepted;
    expect((await t.send(req("/drop-second", upload))).status).toBe(404);
    // The kept-alive connection is dropped under the second upload: it fails, and is not sent again.
    await expect(t.send(req("/drop-second", upload))).rejects.toThrow(/closed before the answer/);
    expect(accepted - before).toBe(1);
    // A reading with its idempotency KEY may be: it goes again on a fresh connection.
    expect((await t.send(req("/drop-second", { method: "POST", body: '{"KEY":"k1"}', idempotent: true }))).status).toBe(404);
    expect((await t.send(req("/drop-second", { method: "POST", body: '{"KEY":"k2"}', idempotent: true }))).status).toBe(404);
    expect(accepted - before).toBe(3);
  });

  it("refuses https and URLs it cannot use, and header values with line breaks", async () => {
    t = new Http1Transport();
    await expect(t.send({ ...req("/"), url: "https://127.0.0.1:1/x" })).rejects.toThrow(/plain http only/);
    await expect(t.send({ ...req("/"), url: "http://user:pw@127.0.0.1:1/x" })).rejects.toThrow(/not a plain http origin/);
    await expect(t.send(req("/echo", { headers: { "x-evil": "a\r\nx-injected: 1" } }))).rejects.toThrow(/line break/);
    expect(() => new Http1Transport({ connections: 0 })).toThrow(/connections must be a positive integer, got 0/);
  });

  it("destroy() fails calls in flight and waiting; close() lets them finish and refuses new ones", async () => {
    t = new Http1Transport({ connections: 1 });
    const first = t.send(req("/hang", { timeoutMs: 30_000 }));
    await waitFor("one request held", () => held.size === 1, 5_000);
    const second = t.send(req("/echo"));
    t.destroy();
    await expect(first).rejects.toThrow(/closed/);
    await expect(second).rejects.toThrow(/closed/);
    await expect(t.send(req("/echo"))).rejects.toThrow(/closed/);

    t = new Http1Transport({ connections: 1 });
    const hung = t.send(req("/hang", { timeoutMs: 30_000 }));
    await waitFor("two requests held", () => held.size === 2, 5_000);
    const waiting = t.send(req("/echo"));
    const closed = t.close();
    await expect(t.send(req("/echo"))).rejects.toThrow(/closed/);
    const answered = [...held].at(-1) as ServerResponse;
    envelope(answered, 200, { result: 1 });
    expect((await hung).status).toBe(200);
    expect((await waiting).status).toBe(200);
    await closed;
    expect(t.stats()).toEqual({ opened: 0, open: 0, queued: 0 });
  });

  it("pipelines calls on busy connections, answers in order, and sends the unanswered ones again when the server closes", async () => {
    t = new Http1Transport({ connections: 1, pipelining: 4 });
    const before = accepted;
    const answers = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => t.send(req("/echo", { method: "POST", body: `b${i}` }))));
    expect(answers.map((a) => Buffer.from((JSON.parse(a.body.toString()) as { body: string }).body, "base64").toString())).toEqual(["b0", "b1", "b2", "b3", "b4", "b5"]);
    expect(accepted - before).toBe(1);
    // An aborted call in the middle: its answer is read and dropped, the others are unharmed.
    const ac = new AbortController();
    const three = [t.send(req("/echo", { body: "x", method: "POST" })), t.send(req("/echo", { signal: ac.signal })), t.send(req("/echo"))];
    ac.abort();
    expect((await Promise.allSettled(three)).map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((await t.send(req("/echo"))).status).toBe(200);
    expect(accepted - before).toBe(1);
    // The server closes after the first answer: the two behind it go again on a new connection.
    const afterBye = await Promise.all([t.send(req("/bye")), t.send(req("/echo")), t.send(req("/echo"))]);
    expect(afterBye.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(afterBye[0]?.body.toString()).toBe("bye");
    expect(accepted - before).toBe(2);
  });

  describe("answers framed every way", () => {
    let raw: NetServer;
    let rawBase: string;
    /** What the raw server writes for a request line's path. */
    const scripts: Record<string, string[]> = {
      "/chunked": ["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n", "6\r\n world\r\n0\r\n\r\n"],
      "/trailers": ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nx-sum: 1\r\n\r\n"],
      "/continue": ["HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\nX-A: 1\r\nX-A: 2\r\n\r\nhi"],
      "/split": ["HTTP/1.1 200 OK\r\nConte", "nt-Length: 4\r\n\r\nab", "cd"],
      "/close": ["HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nbye"],
      "/no-length": ["HTTP/1.0 200 OK\r\n\r\nuntil the end"],
      "/extra": ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokGARBAGE"],
      "/not-http": ["SSH-2.0-OpenSSH\r\n\r\n"],
      "/no-content": ["HTTP/1.1 204 No Content\r\n\r\n"],
    };
    const rawSockets = new Set<Socket>();
    let rawAccepted = 0;

    beforeAll(async () => {
      raw = createNetServer((socket) => {
        rawAccepted++;
        rawSockets.add(socket);
        socket.on("close", () => rawSockets.delete(socket));
        let text = "";
        socket.on("data", (d: Buffer) => {
          text += d.toString("latin1");
          let end = text.indexOf("\r\n\r\n");
          while (end >= 0) {
            const path = text.split(" ")[1] ?? "";
            text = text.slice(end + 4);
            const parts = scripts[path] ?? ["HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"];
            // Each part in its own write, a tick apart, so the client sees them as separate chunks.
            const write = (i: number): void => {
              if (i >= parts.length) {
                if (path === "/no-length" || path === "/close") socket.end();
                return;
              }
              socket.write(parts[i] as string);
              setImmediate(() => write(i + 1));
            };
            write(0);
            end = text.indexOf("\r\n\r\n");
          }
        });
      });
      raw.listen(0, "127.0.0.1");
      await once(raw, "listening");
      rawBase = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
    });

    afterAll(async () => {
      for (const s of rawSockets) s.destroy();
      await new Promise<void>((r) => raw.close(() => r()));
    });

    const get = (path: string): Promise<TransportResponse> => t.send({ method: "GET", url: `${rawBase}${path}`, headers: {}, timeoutMs: 2_000 });

    it("reads chunked bodies, trailers, 1xx before the answer, and heads split across packets, on one connection", async () => {
      t = new Http1Transport({ connections: 1 });
      const before = rawAccepted;
      expect((await get("/chunked")).body.toString()).toBe("hello world");
      expect((await get("/trailers")).body.toString()).toBe("ok");
      const created = await get("/continue");
      expect(created.status).toBe(201);
      expect(created.body.toString()).toBe("hi");
      expect(created.headers["x-a"]).toBe("1, 2");
      expect((await get("/split")).body.toString()).toBe("abcd");
      expect((await get("/no-content")).status).toBe(204);
      expect(rawAccepted - before).toBe(1);
    });

    it("closes a connection the server closes, reads a body ended by the close, and refuses what is not HTTP", async () => {
      t = new Http1Transport({ connections: 1 });
      const before = rawAccepted;
      expect((await get("/close")).body.toString()).toBe("bye");
      expect((await get("/no-length")).body.toString()).toBe("until the end");
      // Bytes past the answer: the answer stands, the connection is not reused.
      expect((await get("/extra")).body.toString()).toBe("ok");
      expect((await get("/chunked")).body.toString()).toBe("hello world");
      expect(rawAccepted - before).toBe(4);
      await expect(get("/not-http")).rejects.toThrow(/not an HTTP\/1 answer/);
    });
  });
});
