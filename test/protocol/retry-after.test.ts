/**
 * A 429 answer's Retry-After reaches the block client's error (retryAfterMs), over the gateway's
 * node:http transport and the simulator's undici one, against a real loopback server.
 */
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockClient, BlockClientError, retryAfterMs } from "../../protocol/block-client.js";
import { type BlockTransport, NodeHttpTransport } from "../../protocol/transport.js";
import { UndiciTransport } from "../../protocol/undici-transport.js";

describe("retryAfterMs", () => {
  const now = Date.UTC(2026, 10, 24, 12, 0, 0);
  it("reads delay-seconds and HTTP-dates, and nothing else", () => {
    expect(retryAfterMs("3", now)).toBe(3000);
    expect(retryAfterMs(" 0 ", now)).toBe(0);
    expect(retryAfterMs(["2", "9"], now)).toBe(2000);
    expect(retryAfterMs("Tue, 24 Nov 2026 12:00:05 GMT", now)).toBe(5000);
    expect(retryAfterMs("Tue, 24 Nov 2026 11:00:00 GMT", now)).toBe(0);
    expect(retryAfterMs(undefined, now)).toBeNull();
    expect(retryAfterMs("", now)).toBeNull();
    expect(retryAfterMs("-1", now)).toBeNull();
    expect(retryAfterMs("1.5", now)).toBeNull();
    expect(retryAfterMs("soon", now)).toBeNull();
    // A server asking for more than a day is asked again after a day.
    expect(retryAfterMs("99999999999", now)).toBe(86_400_000);
  });
});

describe.each([
  ["node:http (gateway)", (): BlockTransport => new NodeHttpTransport()],
  ["undici (simulator)", (): BlockTransport => new UndiciTransport(new Agent())],
])("BlockClient over %s on a 429", (_name, make) => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      const body = JSON.stringify({ result: 0, error: "rate limit exceeded for this credential; slow down", id: 0 });
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (req.url?.includes("WITHRETRY")) headers["retry-after"] = "7";
      res.writeHead(429, headers).end(body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rest/v0`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it("rejects with throttled and the server's Retry-After in ms, or null without one", async () => {
    const transport = make();
    try {
      const err = await new BlockClient({ baseUrl: base, nodeId: "WITHRETRY0001", transport }).activate({ userToken: "u" }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BlockClientError);
      expect(err).toMatchObject({ status: 429, throttled: true, retryAfterMs: 7000 });
      expect((err as Error).message).toMatch(/answered 429: rate limit exceeded/);
      expect((err as Error).message).not.toContain("user_access_token=u");
      const bare = await new BlockClient({ baseUrl: base, nodeId: "NORETRY00001", transport }).data("tok", { G: "1", V: 0, D: 9, DA: "1" }).catch((e: unknown) => e);
      expect(bare).toMatchObject({ status: 429, throttled: true, retryAfterMs: null });
    } finally {
      await transport.close();
    }
  });
});
