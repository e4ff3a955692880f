/**
 * docs/operations-tls.md tells what the API reference at /docs does behind a TLS proxy: its camera
 * operations name the stream listener's own address, and "Try it out" on them fails in the browser
 * (another origin, which the page's policy and the stream listener's lack of CORS both refuse). The
 * facts it rests on are checked here against a running server, so that a change to any of them (an
 * option for the public stream URL, a wider connect-src, CORS on the stream listener) fails this test
 * until the page says what then happens.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildProgram } from "../../cli/program.js";
import { type TestServer, startTestServer } from "../helpers/server.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

interface Served {
  servers: { url: string }[];
  paths: Record<string, Record<string, { servers?: { url: string }[] }>>;
}

describe("the API reference behind a TLS proxy (docs/operations-tls.md)", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({}, { listen: true });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("names the page's own address for the API and the printed stream_url for the camera, which the page cannot call", async () => {
    const { authUrl, streamUrl } = t.server.services.settings;
    const served = (await (await fetch(`${authUrl}/docs/json`)).json()) as Served;
    expect(served.servers.map((s) => s.url)).toEqual(["/"]);
    const elsewhere = Object.entries(served.paths).flatMap(([path, item]) =>
      Object.entries(item).flatMap(([method, op]) => (op.servers ? [`${method} ${path} ${op.servers.map((s) => s.url).join(" ")}`] : [])),
    );
    expect(elsewhere).toEqual([`get /rest/v0/camera/{guid}/snapshot ${streamUrl}`, `post /rest/v0/camera/{guid}/snapshot ${streamUrl}`]);
    // The page may fetch from its own origin only, and the stream listener grants no other origin.
    const page = await fetch(`${authUrl}/docs/`);
    await page.arrayBuffer();
    expect(page.headers.get("content-security-policy")).toMatch(/(^|; )connect-src 'self'(;|$)/);
    const preflight = await fetch(`${streamUrl}/rest/v0/camera/ABCDEF123456_0_0_1004/snapshot`, {
      method: "OPTIONS",
      headers: { origin: authUrl, "access-control-request-method": "GET" },
    });
    await preflight.arrayBuffer();
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    // And the server has no option for its public stream URL, which the page says.
    const server = buildProgram({ stdout: () => {}, stderr: () => {}, env: {}, readStdin: () => Promise.resolve("") }).commands.find((c) => c.name() === "server");
    expect(server?.options.map((o) => o.long).filter((f) => /public|stream-url|external/.test(f ?? ""))).toEqual([]);

    const tls = readFileSync(`${root}docs/operations-tls.md`, "utf8");
    const section = tls.slice(tls.indexOf("## The API reference behind the proxy"));
    expect(section.startsWith("## The API reference behind the proxy"), "the section is on the page").toBe(true);
    const text = section.slice(0, section.indexOf("\n## ", 3) === -1 ? undefined : section.indexOf("\n## ", 3)).replace(/\s+/g, " ");
    for (const said of ["`servers` is `/`", "`stream_url` (`http://127.0.0.1:8001`)", "no option for its public stream URL", '"Try it out" on those two to fail', "`connect-src 'self'`", "no CORS preflight", "--stream https://hub.example:8443"]) {
      expect(text, said).toContain(said);
    }
  });
});
