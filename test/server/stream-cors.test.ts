/**
 * CORS on the stream listener for the API's own pages (server/http/stream-cors.ts), the reference's
 * policy and servers that go with it (`publicUrl`, `publicStreamUrl`). Real listeners on loopback,
 * so that auth_url and stream_url are known; requests through inject() with the Origin a browser sends.
 * The browser itself: test/browser/docs-camera.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockkitServer } from "../../server/controller.js";
import { type TestServer, startTestServer } from "../helpers/server.js";

const CAM = "CORSCAMERA01_0_0_1004";
let plain: TestServer;
let proxied: TestServer;

beforeAll(async () => {
  [plain, proxied] = await Promise.all([
    startTestServer({ streamPort: 0 }, { listen: true }),
    startTestServer({ streamPort: 0, publicUrl: "https://hub.example", publicStreamUrl: "https://hub.example:8443/" }, { listen: true }),
  ]);
});

afterAll(async () => {
  await Promise.all([plain?.close(), proxied?.close()]);
});

const apiOrigin = (t: TestServer): string => new URL(t.baseUrl as string).origin;
const preflight = (t: TestServer, origin: string, method = "POST", headers = "x-service-token,content-type") =>
  t.server.stream.inject({
    method: "OPTIONS",
    url: `/rest/v0/camera/${CAM}/snapshot`,
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": headers },
  });

describe("the stream listener's CORS", () => {
  it("answers the preflight of the API's own origin: the camera's methods and the block token's headers, no credentials", async () => {
    const res = await preflight(plain, apiOrigin(plain));
    expect(res.statusCode).toBe(204);
    expect(res.headers).toMatchObject({
      "access-control-allow-origin": apiOrigin(plain),
      "access-control-allow-methods": "GET, POST",
      "access-control-allow-headers": "X-Service-Token, X-Ninja-Token, Content-Type",
      "access-control-max-age": "600",
      vary: "Origin",
    });
    expect(res.headers["access-control-allow-credentials"]).toBeUndefined();
  });

  it("refuses the preflight of another origin, another method or another header, with the envelope and no CORS header", async () => {
    const origins = [
      [await preflight(plain, "http://evil.example"), /API's own origin only \(http:\/\/127\.0\.0\.1:\d+\), not http:\/\/evil\.example$/],
      [await preflight(plain, apiOrigin(plain).replace("127.0.0.1", "localhost")), /not http:\/\/localhost:/],
    ] as const;
    const asks = [
      [await preflight(plain, apiOrigin(plain), "DELETE"), /Access-Control-Request-Method must be GET or POST, not "DELETE"/],
      // The session's CSRF header: a page may not sign a camera call with the cookie.
      [await preflight(plain, apiOrigin(plain), "GET", "x-csrf-token"), /the header "x-csrf-token" is not allowed/],
    ] as const;
    for (const [res, why] of [...origins, ...asks]) {
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ result: 0, id: 0, error: expect.stringMatching(why) });
      expect(res.headers["access-control-allow-methods"]).toBeUndefined();
    }
    for (const [res] of origins) expect(res.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("lets the API's pages read the camera's answers, refusals included, and no other origin's", async () => {
    const get = (t: TestServer, origin: string) => t.server.stream.inject({ method: "GET", url: `/rest/v0/camera/${CAM}/snapshot`, headers: { origin } });
    const mine = await get(plain, apiOrigin(plain));
    // No credential: the spec's refusal, unchanged, now readable by the page.
    expect(mine.statusCode).toBe(401);
    expect(mine.json()).toMatchObject({ result: 0, id: 0 });
    expect(mine.headers).toMatchObject({ "access-control-allow-origin": apiOrigin(plain), "access-control-expose-headers": "Retry-After", vary: "Origin" });
    const theirs = await get(plain, "http://evil.example");
    expect(theirs.statusCode).toBe(401);
    expect(theirs.headers["access-control-allow-origin"]).toBeUndefined();
    // Without an Origin (curl, the gateway, the command line): nothing added.
    const bare = await plain.server.stream.inject({ method: "GET", url: `/rest/v0/camera/${CAM}/snapshot` });
    expect(bare.headers.vary).toBeUndefined();
    expect(bare.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("behind a proxy, also answers the public API origin (publicUrl)", async () => {
    expect((await preflight(proxied, "https://hub.example")).headers["access-control-allow-origin"]).toBe("https://hub.example");
    expect((await preflight(proxied, apiOrigin(proxied))).statusCode).toBe(204);
    expect((await preflight(proxied, "https://hub.example:8443")).statusCode).toBe(403);
  });
});

describe("the reference at /docs and the stream listener", () => {
  const streamOrigin = (t: TestServer): string => t.server.services.settings.streamUrl;

  it("may connect to the stream listener's origin, and names it as the camera operations' server", async () => {
    const page = await plain.server.api.inject({ method: "GET", url: "/docs/static/index.html" });
    expect(page.headers["content-security-policy"]).toContain(`connect-src 'self' ${streamOrigin(plain)};`);
    const spec = (await plain.server.api.inject({ method: "GET", url: "/docs/json" })).json() as { paths: Record<string, Record<string, { servers?: { url: string }[] }>> };
    const camera = spec.paths["/rest/v0/camera/{guid}/snapshot"] ?? {};
    expect(Object.values(camera).map((op) => op.servers)).toEqual([[{ url: streamOrigin(plain) }], [{ url: streamOrigin(plain) }]]);
  });

  it("behind a proxy, names the public stream URL (publicStreamUrl) instead", async () => {
    const page = await proxied.server.api.inject({ method: "GET", url: "/docs/static/index.html" });
    expect(page.headers["content-security-policy"]).toContain("connect-src 'self' https://hub.example:8443;");
    const spec = (await proxied.server.api.inject({ method: "GET", url: "/docs/json" })).json() as { paths: Record<string, Record<string, { servers?: { url: string }[] }>> };
    const camera = spec.paths["/rest/v0/camera/{guid}/snapshot"] ?? {};
    expect(Object.values(camera).map((op) => op.servers)).toEqual([[{ url: "https://hub.example:8443" }], [{ url: "https://hub.example:8443" }]]);
  });

  it("checks the public URLs when the server is made, naming the option", () => {
    expect(() => new BlockkitServer({ publicUrl: "hub.example" })).toThrow(/^publicUrl: "hub\.example" is not a URL/);
    expect(() => new BlockkitServer({ publicStreamUrl: "ftp://hub.example" })).toThrow(/^publicStreamUrl: "ftp:\/\/hub\.example" is not an http or https URL/);
    expect(() => new BlockkitServer({ publicStreamUrl: "https://u:p@hub.example" })).toThrow(/carries a user name or password/);
    expect(() => new BlockkitServer({ publicUrl: "https://hub.example/?a=1" })).toThrow(/has a query or fragment/);
  });
});
