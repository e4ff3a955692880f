/**
 * The fleet's held calls (the commands long-poll, activation), a connection each: through the
 * simulator's own HTTP/1.1 client without pipelining (simulator/transport/pool.ts, the default for
 * plain http) and through undici (simulator/fleet/held-pool.ts: https, `--transport undici`). A
 * call takes the connection a finished call freed last, opens one only when none is free (a poll
 * renewed as soon as its answer arrives gets its own connection back: no spare one is opened, so a
 * block holds one descriptor; undici's own Agent fails this, with 10 connections for 5 polls), and
 * keeps working after a connection died.
 */
import { once } from "node:events";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BlockTransport } from "../../../protocol/transport.js";
import { UndiciTransport } from "../../../protocol/undici-transport.js";
import { HeldPool } from "../../../simulator/fleet/held-pool.js";
import { Http1Transport } from "../../../simulator/transport/http1-transport.js";

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

const get = (t: BlockTransport, path: string) => t.send({ method: "GET", url: `${base}/${path}`, headers: {}, timeoutMs: 5000 });

interface Held {
  t: BlockTransport;
  /** Connections open. */
  size(): number;
  close(): Promise<void>;
  destroy(): Promise<void>;
}

const KINDS: { name: string; make(): Held }[] = [
  {
    name: "the simulator's own client",
    make: () => {
      const t = new Http1Transport({ connections: Number.MAX_SAFE_INTEGER, pipelining: 1, sweepMs: 1_000 });
      return { t, size: () => t.stats().open, close: () => t.close(), destroy: async () => t.destroy() };
    },
  },
  {
    name: "undici",
    make: () => {
      const pool = new HeldPool({ keepAliveTimeout: 60_000 });
      return { t: new UndiciTransport(pool), size: () => pool.size, close: () => pool.close(), destroy: () => pool.destroy() };
    },
  },
];

function releaseHeld(): void {
  for (const res of held.splice(0)) res.writeHead(200, { "content-type": "application/json" }).end('{"DEVICE":[]}');
}

describe.each(KINDS)("held calls through $name", ({ make }) => {
  it("reuses the connections that finished calls freed, and opens one only when none is free", async () => {
    const h = make();
    ports = new Set();
    try {
      for (let i = 0; i < 10; i++) expect((await get(h.t, "ping")).status).toBe(200);
      expect(h.size()).toBe(1);
      expect(ports.size).toBe(1);
      // Five polls held at once: five connections; released, the next five take the same ones.
      for (let round = 0; round < 2; round++) {
        const polls = Array.from({ length: 5 }, () => get(h.t, "commands"));
        await until("five polls held", () => held.length === 5);
        releaseHeld();
        for (const r of await Promise.all(polls)) expect(r.status).toBe(200);
      }
      expect(h.size()).toBe(5);
      expect(ports.size).toBe(5);
    } finally {
      await h.close();
    }
  });

  it("gives a poll renewed the moment its answer arrives the connection it freed: no spare is opened", async () => {
    const h = make();
    ports = new Set();
    let answered = 0;
    try {
      // Five blocks, each polling again as soon as its answer is read, for four rounds.
      const block = async (): Promise<void> => {
        for (let round = 0; round < 4; round++) {
          expect((await get(h.t, "commands")).status).toBe(200);
          answered++;
        }
      };
      const blocks = Array.from({ length: 5 }, () => block());
      for (let round = 1; round <= 4; round++) {
        await until(`round ${round}: five polls held`, () => held.length === 5);
        releaseHeld();
        await until(`round ${round}: five answers read`, () => answered === 5 * round);
      }
      await Promise.all(blocks);
      expect(ports.size).toBe(5);
      expect(h.size()).toBe(5);
    } finally {
      await h.close();
    }
  });

  it("keeps serving after a connection died under a call", async () => {
    const h = make();
    try {
      await expect(get(h.t, "die")).rejects.toThrow();
      expect((await get(h.t, "ping")).status).toBe(200);
      expect(h.size()).toBe(1);
    } finally {
      await h.destroy();
    }
  });
});

describe("the undici held-call pool", () => {
  it("refuses calls once closed", async () => {
    const pool = new HeldPool({ keepAliveTimeout: 60_000 });
    await pool.close();
    expect(() => pool.dispatch({ origin: base, path: "/", method: "GET" }, {} as never)).toThrow(/closed/);
  });

  it("refuses a keep-alive that is not a positive whole number", () => {
    expect(() => new HeldPool({ keepAliveTimeout: 0 })).toThrow(/keepAliveTimeout must be a positive integer, got 0/);
  });
});
