/**
 * The fleet's router: readings and uploads through the simulator's own HTTP/1.1 client by default,
 * through undici with `--transport undici`; held calls likewise (a connection each).
 */
import { once } from "node:events";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fleetTransport } from "../../../simulator/fleet/transport.js";

let server: Server;
let base: string;

beforeAll(async () => {
  // Answers with the request's raw header fields.
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(req.rawHeaders)));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rest/v0/block/FLEETTRANSP01`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** undici adds `connection: keep-alive` to every request; the simulator's own client never does. */
async function viaUndici(kind: "http1" | "undici" | undefined, path: string, method: "GET" | "POST"): Promise<boolean> {
  const http = fleetTransport(2, 4, kind);
  try {
    const res = await http.transport.send({ method, url: `${base}/${path}`, headers: { "x-service-token": "t" }, body: method === "POST" ? "{}" : undefined, timeoutMs: 5_000 });
    const raw = JSON.parse(res.body.toString()) as string[];
    expect(raw).toContain("x-service-token");
    return raw.some((h) => h.toLowerCase() === "connection");
  } finally {
    await http.close();
  }
}

describe("fleet transport", () => {
  it("sends readings through the simulator's own client by default and with http1, through undici with undici", async () => {
    expect(await viaUndici(undefined, "data", "POST")).toBe(false);
    expect(await viaUndici("http1", "data", "POST")).toBe(false);
    expect(await viaUndici("undici", "data", "POST")).toBe(true);
  });

  it("sends held calls through the simulator's own client by default and with http1, through undici with undici", async () => {
    expect(await viaUndici(undefined, "commands", "GET")).toBe(false);
    expect(await viaUndici("http1", "activate", "GET")).toBe(false);
    expect(await viaUndici("undici", "commands", "GET")).toBe(true);
  });

  it("refuses a client it does not know", () => {
    expect(() => fleetTransport(2, 4, "curl" as never)).toThrow(/kind must be one of http1, undici, got curl/);
  });
});
