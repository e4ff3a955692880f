/**
 * The fast lane (server/http/fast-ingest.ts) does itself what the API app's hooks do on the
 * block-event routes: the list it declares must be the app's, so a hook added to the app fails
 * here until the lane mirrors it; and a body the lane hands back to fastify is rate-limited once.
 */
import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { MIRRORED_HOOKS } from "../../server/http/fast-ingest.js";
import { type TestServer, startTestServer } from "../helpers/server.js";

const NODE = "MIRRORLANE001";

/** Hook names per kind on `POST <segment>`, read from fastify's route tree. */
function routeHooks(tree: string, segment: string): Record<string, string[]> {
  const hooks: Record<string, string[]> = {};
  let inRoute = false;
  for (const line of tree.split("\n")) {
    const route = /── (\S+) \(POST\)/.exec(line);
    if (route) {
      inRoute = route[1] === segment;
      continue;
    }
    const hook = /• \((\w+)\) \[(.*)\]/.exec(line);
    if (inRoute && hook) hooks[hook[1] as string] = JSON.parse(`[${hook[2]}]`).map((n: string) => n.replace(/\(\)$/, "")).sort();
  }
  return hooks;
}

describe("the fast lane mirrors the API app", () => {
  let t: TestServer | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("declares exactly the hooks the app runs on each block-event route", async () => {
    t = await startTestServer();
    const tree = t.server.api.printRoutes({ includeHooks: true, commonPrefix: false, method: "POST" });
    for (const kind of ["data", "heartbeat", "config"]) {
      const hooks = routeHooks(tree, `/:nodeId/${kind}`);
      expect(Object.keys(hooks).length, `hooks of POST /block/:nodeId/${kind}`).toBeGreaterThan(0);
      const mirrored = Object.fromEntries(Object.entries(MIRRORED_HOOKS).map(([k, names]) => [k, [...names].sort()]));
      expect(hooks, `POST /block/:nodeId/${kind}`).toEqual(mirrored);
    }
  });

  it("charges the rate limit once for a body it replays through fastify", async () => {
    // A bucket of two requests and a clock that stands still: nothing refills during the test.
    const now = Date.parse("2026-11-24T12:00:00Z");
    t = await startTestServer({ host: "127.0.0.1", port: 0, streamPort: 0, rateLimitPerSecond: 1, clock: () => now }, { listen: true });
    const token = await t.activate(NODE);
    const port = Number(new URL(t.baseUrl as string).port);
    const post = (body: string): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = request(
          {
            host: "127.0.0.1",
            port,
            method: "POST",
            path: `/rest/v0/block/${NODE}/data`,
            headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), "x-service-token": token },
          },
          (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode ?? 0));
          },
        );
        req.on("error", reject);
        req.end(body);
      });
    // The first event goes through fastify and puts the token in the cache (one request spent).
    expect(await post('{"G":"0","V":0,"D":9,"DA":"20"}')).toBe(200);
    // A body that fails the lane's check is replayed through fastify.
    const before = t.server.api.fastIngest?.stats.replayed ?? 0;
    expect(await post('{"G":"0","V":0,"D":9}')).toBe(400);
    expect(t.server.api.fastIngest?.stats.replayed).toBe(before + 1);
    // The one request of the bucket was spent on that answer, not twice: the next one is refused.
    expect(await post('{"G":"0","V":0,"D":9,"DA":"21"}')).toBe(429);
  });
});
