/**
 * The block transports against a real loopback node:http server: the same suite for the node:http
 * transport (the gateway's), the undici one (the simulator's held calls) and the lean HTTP/1.1 one
 * (the simulator's readings), then BlockClient's mapping of their outcomes to BlockClientError over
 * each.
 */
import { once } from "node:events";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import { type AddressInfo, type Server as NetServer, type Socket, createServer as createNetServer } from "node:net";
import { Agent } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BlockClient, BlockClientError } from "../../protocol/block-client.js";
import { type BlockTransport, NodeHttpTransport, TimeoutError, type TransportResponse } from "../../protocol/transport.js";
import { Http1Transport } from "../../simulator/transport/http1-transport.js";
import { UndiciTransport } from "../../protocol/undici-transport.js";
import { refusingAddress } from "../helpers/process.js";
import { waitFor } from "../helpers/wait.js";

const NODE = "TRANSPORT00001";
let server: Server;
let base: string;
/** Connections the server accepted, and the requests seen on each. */
const connections = new Set<Socket>();
let accepted = 0;
const perSocket = new WeakMap<Socket, number>();
/** The connection of the last /echo request. */
let lastSocket: Socket | undefined;
/** Requests held open by /hang, answered (or dropped) in afterEach. */
const held = new Set<ServerResponse>();

function envelope(res: ServerResponse, status: number, body: object): void {
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

const req = (path: string, extra: Partial<Parameters<BlockTransport["send"]>[0]> = {}): Parameters<BlockTransport["send"]>[0] => ({
  method: "GET",
  url: `${base}${path}`,
  headers: {},
  timeoutMs: 5_000,
  ...extra,
});

const implementations: [string, () => { transport: BlockTransport; done: () => Promise<void> }][] = [
  [
    "node:http",
    () => {
      const transport = new NodeHttpTransport();
      return { transport, done: () => transport.close() };
    },
  ],
  [
    "undici",
    () => {
      const agent = new Agent({ keepAliveTimeout: 10_000 });
      return { transport: new UndiciTransport(agent), done: () => agent.close() };
    },
  ],
  [
    "lean HTTP/1.1",
    () => {
      const transport = new Http1Transport({ connections: 4 });
      return { transport, done: () => transport.close() };
    },
  ],
];

describe.each(implementations)("%s transport", (_name, make) => {
  let t: ReturnType<typeof make>;
  afterEach(async () => {
    await t.done();
  });

  it("sends method, headers and a JSON body, and returns any status with its body", async () => {
    t = make();
    const r = await t.transport.send(req("/echo", { method: "POST", headers: { "content-type": "application/json", "x-service-token": "abc" }, body: '{"DA":"1"}' }));
    expect(r.status).toBe(200);
    const echo = JSON.parse(r.body.toString("utf8")) as { method: string; headers: Record<string, string>; body: string };
    expect(echo.method).toBe("POST");
    expect(Buffer.from(echo.body, "base64").toString("utf8")).toBe('{"DA":"1"}');
    expect(echo.headers).toMatchObject({ "content-type": "application/json", "x-service-token": "abc", "content-length": "10" });
    const missing = await t.transport.send(req("/status/404"));
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.body.toString("utf8"))).toMatchObject({ error: "status 404 asked" });
  });

  it("sends binary bodies unchanged", async () => {
    t = make();
    const image = Uint8Array.from([0xff, 0xd8, 0x00, 0x80, 0xff, 0xd9]);
    const r = await t.transport.send(req("/echo", { method: "POST", headers: { "content-type": "image/jpeg" }, body: image }));
    const echo = JSON.parse(r.body.toString("utf8")) as { headers: Record<string, string>; body: string };
    expect(echo.headers["content-length"]).toBe("6");
    expect(Buffer.from(echo.body, "base64").equals(Buffer.from(image))).toBe(true);
  });

  it("gives up after timeoutMs without an answer, and after timeoutMs of silence in the body", async () => {
    t = make();
    const t0 = Date.now();
    await expect(t.transport.send(req("/hang", { timeoutMs: 200 }))).rejects.toThrow(/timeout|within 200 ms/i);
    await expect(t.transport.send(req("/half", { timeoutMs: 200 }))).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(3_000);
  });

  it("stops at once when the signal aborts, or was aborted before", async () => {
    t = make();
    const ac = new AbortController();
    const pending = t.transport.send(req("/hang", { signal: ac.signal, timeoutMs: 30_000 }));
    await waitFor("one request held", () => held.size === 1, 5_000);
    const t0 = Date.now();
    ac.abort();
    await expect(pending).rejects.toThrow(/abort/i);
    expect(Date.now() - t0).toBeLessThan(1_000);
    await expect(t.transport.send(req("/echo", { signal: AbortSignal.abort() }))).rejects.toThrow(/abort/i);
  });

  it("refuses an answer over maxBytes, declared or streamed", async () => {
    t = make();
    expect((await t.transport.send(req("/big", { maxBytes: 4096 }))).body.length).toBe(4096);
    await expect(t.transport.send(req("/big", { maxBytes: 1000 }))).rejects.toThrow(/over the limit of 1000 bytes/);
    await expect(t.transport.send(req("/big-chunked", { maxBytes: 3000 }))).rejects.toThrow(/over the limit of 3000 bytes/);
  });

  it("rejects when the server cannot be reached or drops the connection", async () => {
    t = make();
    const closed = await refusingAddress();
    try {
      await expect(t.transport.send({ ...req("/"), url: `${closed.url}/x` })).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      await closed.close();
    }
    await expect(t.transport.send(req("/drop"))).rejects.toThrow();
  });
});

describe("node:http transport", () => {
  it("keeps one connection for sequential calls", async () => {
    const t = new NodeHttpTransport();
    try {
      const before = accepted;
      for (let i = 0; i < 5; i++) expect((await t.send(req("/echo"))).status).toBe(200);
      expect(accepted - before).toBe(1);
    } finally {
      await t.close();
    }
  });

  it("does not connect for a signal aborted before the call", async () => {
    const t = new NodeHttpTransport();
    try {
      const before = accepted;
      await expect(t.send(req("/echo", { signal: AbortSignal.abort() }))).rejects.toThrow(/abort/i);
      expect(accepted).toBe(before);
    } finally {
      await t.close();
    }
  });

  it("sends a request again on a fresh connection when a kept-alive one was closed under it", async () => {
    const t = new NodeHttpTransport();
    try {
      const before = accepted;
      expect((await t.send(req("/drop-second"))).status).toBe(404);
      // Second request: same connection, dropped by the server; sent again on a new connection,
      // where it is that connection's first request and is answered.
      expect((await t.send(req("/drop-second"))).status).toBe(404);
      expect(accepted - before).toBe(2);
    } finally {
      await t.close();
    }
  });

  it("does not send a POST again that is not marked idempotent", async () => {
    const t = new NodeHttpTransport();
    try {
      const before = accepted;
      const upload = { method: "POST" as const, body: Uint8Array.from([1, 2]) };
      expect((await t.send(req("/drop-second", upload))).status).toBe(404);
      await expect(t.send(req("/drop-second", upload))).rejects.toThrow();
      expect(accepted - before).toBe(1);
    } finally {
      await t.close();
    }
  });

  it("names its timeouts and checks its options", () => {
    expect(new TimeoutError("x").code).toBe("ETIMEDOUT");
    expect(() => new NodeHttpTransport({ maxSockets: 0 })).toThrow(/maxSockets must be a positive integer, got 0/);
    expect(() => new NodeHttpTransport({ idleTimeoutMs: 1.5 })).toThrow(/idleTimeoutMs/);
    expect(() => new UndiciTransport({} as never)).toThrow(TypeError);
  });

  it("closes its idle connections on close()", async () => {
    const t = new NodeHttpTransport();
    await t.send(req("/echo"));
    const socket = lastSocket as Socket;
    expect(socket.destroyed).toBe(false);
    await t.close();
    await waitFor("the socket destroyed", () => socket.destroyed, 5_000);
    expect(connections.has(socket)).toBe(false);
  });
});

describe.each([
  ["default (node:http)", (): BlockClient => new BlockClient({ baseUrl: `${base}/rest/v0`, streamUrl: base, nodeId: NODE, timeoutMs: 300, holdTimeoutMs: 300 })],
  [
    "with a dispatcher (undici)",
    (): BlockClient => new BlockClient({ baseUrl: `${base}/rest/v0`, streamUrl: base, nodeId: NODE, timeoutMs: 300, holdTimeoutMs: 300, dispatcher: sharedAgent }),
  ],
  [
    "with the lean HTTP/1.1 transport",
    (): BlockClient => new BlockClient({ baseUrl: `${base}/rest/v0`, streamUrl: base, nodeId: NODE, timeoutMs: 300, holdTimeoutMs: 300, transport: sharedLean }),
  ],
])("BlockClient %s", (_name, make) => {
  let client: BlockClient;
  afterEach(async () => {
    await client.close();
  });

  it("activates, posts readings and reads commands", async () => {
    client = make();
    expect(await client.activate({ userToken: "u" })).toBe("tok-1");
    expect(await client.activate()).toBeNull();
    await expect(client.data("good", { G: "0", V: 0, D: 9, DA: "21.5" })).resolves.toBeUndefined();
    expect(await client.commands("good")).toEqual([{ G: "0", V: 0, D: 1002, DA: "1", GUID: "g" }]);
  });

  it("maps 401 and 403 to unauthorized and 400 to rejected, with the server's message", async () => {
    client = make();
    const revoked = await client.data("revoked", { G: "0", V: 0, D: 9, DA: "1" }).catch((e: unknown) => e);
    expect(revoked).toBeInstanceOf(BlockClientError);
    expect(revoked).toMatchObject({ status: 401, unauthorized: true, rejected: false });
    expect((revoked as Error).message).toMatch(/answered 401: unknown block token/);
    await expect(client.data("forbidden", { G: "0", V: 0, D: 9, DA: "1" })).rejects.toMatchObject({ status: 403, unauthorized: true });
    await expect(client.data("good", { G: "0", V: 0, D: 9, DA: "" })).rejects.toMatchObject({ status: 400, rejected: true, unauthorized: false });
  });

  it("reports network errors, timeouts and aborts as status 0", async () => {
    client = make();
    const refusing = await refusingAddress();
    const closed = new BlockClient({ baseUrl: `${refusing.url}/rest/v0`, nodeId: NODE });
    await expect(closed.data("t", { G: "0", V: 0, D: 9, DA: "1" })).rejects.toMatchObject({ status: 0, unauthorized: false, rejected: false });
    await closed.close();
    await refusing.close();
    const hang = new BlockClient({ baseUrl: `${base}/hang`, nodeId: NODE, timeoutMs: 200 });
    const t0 = Date.now();
    await expect(hang.data("t", { G: "0", V: 0, D: 9, DA: "1" })).rejects.toMatchObject({ status: 0 });
    expect(Date.now() - t0).toBeLessThan(2_000);
    await hang.close();
    await expect(client.commands("good", AbortSignal.abort())).rejects.toMatchObject({ status: 0, message: expect.stringMatching(/abort/i) as unknown });
  });

  it("never puts the user token in an error message", async () => {
    const refusing = await refusingAddress();
    client = new BlockClient({ baseUrl: `${refusing.url}/rest/v0`, nodeId: NODE });
    const err = (await client.activate({ userToken: "secret-user-token" }).catch((e: unknown) => e)) as Error;
    await refusing.close();
    expect(err).toBeInstanceOf(BlockClientError);
    expect(err.message).toMatch(/ECONNREFUSED/);
    expect(err.message).not.toContain("secret-user-token");
  });
});

const sharedAgent = new Agent({ keepAliveTimeout: 10_000 });
const sharedLean = new Http1Transport();
afterAll(async () => {
  await sharedAgent.close();
  await sharedLean.close();
});

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
