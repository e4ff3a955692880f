/**
 * The block transports against a real loopback node:http server: the same suite for the node:http
 * transport (the gateway's), the undici one (the simulator's held calls) and the lean HTTP/1.1 one
 * (the simulator's readings), then what only the node:http one does. The lean one's own behaviour
 * (queueing, pipelining, framing) is in test/simulator/transport/http1-transport.test.ts, and
 * BlockClient over each in block-client-transports.test.ts.
 */
import type { Socket } from "node:net";
import { Agent } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { type BlockTransport, NodeHttpTransport, TimeoutError } from "../../protocol/transport.js";
import { Http1Transport } from "../../simulator/transport/http1-transport.js";
import { UndiciTransport } from "../../protocol/undici-transport.js";
import { refusingAddress } from "../helpers/process.js";
import { accepted, connections, held, lastSocket, req, serveTransportRoutes } from "../helpers/transport-server.js";
import { waitFor } from "../helpers/wait.js";

serveTransportRoutes();

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
