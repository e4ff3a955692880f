/**
 * The fleet's pool for held calls (simulator/fleet/held-pool.ts): a call takes a connection that a
 * finished call freed, opens one only when none is free, and keeps working after a connection died.
 */
import { once } from "node:events";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UndiciTransport } from "../../../protocol/undici-transport.js";
import { HeldPool } from "../../../simulator/fleet/held-pool.js";

let server: Server;
let base: string;
/** Held answers, released by the test. */
const held: ServerResponse[] = [];
let ports = new Set<number>();

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    ports.add(req.socket.remotePort as number);
    req.resume();
    if (req.url?.endsWith("/commands")) held.push(res);
    else if (req.url?.endsWith("/die")) req.socket.destroy();
    else res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rest/v0/block/HELDPOOLTEST01`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

async function until(what: string, ok: () => boolean): Promise<void> {
  const end = Date.now() + 5000;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const get = (t: UndiciTransport, path: string) => t.send({ method: "GET", url: `${base}/${path}`, headers: {}, timeoutMs: 5000 });

describe("held-call pool", () => {
  it("reuses the connections that finished calls freed, and opens one only when none is free", async () => {
    const pool = new HeldPool({ keepAliveTimeout: 60_000 });
    const t = new UndiciTransport(pool);
    ports = new Set();
    try {
      for (let i = 0; i < 10; i++) expect((await get(t, "ping")).status).toBe(200);
      expect(pool.size).toBe(1);
      expect(ports.size).toBe(1);
      // Five polls held at once: five connections; released, the next five take the same ones.
      for (let round = 0; round < 2; round++) {
        const polls = Array.from({ length: 5 }, () => get(t, "commands"));
        await until("five polls held", () => held.length === 5);
        for (const res of held.splice(0)) res.writeHead(200, { "content-type": "application/json" }).end('{"DEVICE":[]}');
        for (const r of await Promise.all(polls)) expect(r.status).toBe(200);
      }
      expect(pool.size).toBe(5);
      expect(ports.size).toBe(5);
    } finally {
      await pool.close();
    }
    expect(() => pool.dispatch({ origin: base, path: "/", method: "GET" }, {} as never)).toThrow(/closed/);
  });

  it("keeps serving after a connection died under a call", async () => {
    const pool = new HeldPool({ keepAliveTimeout: 60_000 });
    const t = new UndiciTransport(pool);
    try {
      await expect(get(t, "die")).rejects.toThrow();
      expect((await get(t, "ping")).status).toBe(200);
      expect(pool.size).toBe(1);
    } finally {
      await pool.destroy();
    }
  });

  it("refuses a keep-alive that is not a positive whole number", () => {
    expect(() => new HeldPool({ keepAliveTimeout: 0 })).toThrow(/keepAliveTimeout must be a positive integer, got 0/);
  });
});
