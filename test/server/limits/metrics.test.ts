/** GET /metrics: Prometheus text with the server's counters; loopback only, or a bearer token. */
import { afterEach, describe, expect, it } from "vitest";
import { type TestServer, startTestServer } from "../../helpers/server.js";

const NODE = "METRICSNODE01";

/** The value of one sample line (`name{labels} value`), or undefined. */
function sample(text: string, line: string): number | undefined {
  const found = text.split("\n").find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe("server metrics", () => {
  let t: TestServer;
  afterEach(async () => {
    await t.close();
  });

  it("counts requests by route (the fast lane too), ingest, holds, callbacks, rules and limits", async () => {
    t = await startTestServer({ rateLimitPerSecond: 1 }, { listen: true });
    const bt = await t.activate(NODE);
    const post = (DA: string) =>
      fetch(`${t.baseUrl as string}/block/${NODE}/data`, { method: "POST", headers: { "content-type": "application/json", "x-service-token": bt }, body: JSON.stringify({ G: "0", V: 0, D: 9, DA }) });
    expect((await post("1")).status).toBe(200);
    expect((await post("2")).status).toBe(200);
    const limited = await post("3");
    expect(limited.status).toBe(429);
    // When to ask again, for clients that honour it (the gateway's and the simulator's blocks do).
    expect(limited.headers.get("retry-after")).toBe("1");
    expect((await fetch(`${t.baseUrl as string}/devices?user_access_token=nope`)).status).toBe(401);
    const res = await fetch(`${new URL(t.baseUrl as string).origin}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(sample(text, 'blockkit_http_requests_total{route="/rest/v0/block/:nodeId/data",method="POST",status="200"}')).toBe(2);
    expect(sample(text, 'blockkit_http_requests_total{route="/rest/v0/block/:nodeId/data",method="POST",status="429"}')).toBe(1);
    expect(sample(text, 'blockkit_http_requests_total{route="/rest/v0/devices",method="GET",status="401"}')).toBe(1);
    expect(sample(text, "blockkit_ingest_events_total")).toBe(2);
    expect(sample(text, "blockkit_ingest_commit_seconds_count")).toBeGreaterThanOrEqual(1);
    // Once: the fast lane declines an empty bucket without counting it, fastify refuses and counts.
    expect(sample(text, 'blockkit_limit_hits_total{limit="rate_limit"}')).toBe(1);
    for (const name of ["blockkit_held_polls", "blockkit_activation_holds", "blockkit_open_connections", "blockkit_callback_queue_depth", "blockkit_rule_runs_total", "blockkit_rule_failures_total", "blockkit_store_errors_total"]) {
      expect(sample(text, name), name).toBeTypeOf("number");
    }
    expect(text).toContain("# TYPE blockkit_callback_drops_total counter");
    expect(sample(text, 'blockkit_callback_drops_total{reason="user_queue_full"}')).toBe(0);
  });

  it("answers other addresses only with the metrics token", async () => {
    t = await startTestServer({ metricsToken: "scrape-secret-0123456789" });
    const get = (remoteAddress: string, authorization?: string) =>
      t.server.api.inject({ method: "GET", url: "/metrics", remoteAddress, headers: authorization ? { authorization } : {} });
    expect((await get("192.0.2.7", "Bearer scrape-secret-0123456789")).statusCode).toBe(200);
    expect((await get("192.0.2.7", "Bearer wrong")).statusCode).toBe(401);
    expect((await get("127.0.0.1")).statusCode).toBe(401);
    await t.close();
    t = await startTestServer();
    const open = await t.server.api.inject({ method: "GET", url: "/metrics", remoteAddress: "192.0.2.7" });
    expect(open.statusCode).toBe(403);
    expect(open.json()).toMatchObject({ result: 0, error: expect.stringContaining("loopback") });
    expect((await t.server.api.inject({ method: "GET", url: "/metrics", remoteAddress: "127.0.0.1" })).statusCode).toBe(200);
  });
});
