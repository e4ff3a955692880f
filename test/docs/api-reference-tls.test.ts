/**
 * docs/operations-tls.md tells what the API reference at /docs does behind a TLS proxy: its camera
 * operations name the stream listener (the printed stream_url, or --public-stream-url), the page's
 * policy lets it connect there, and the stream listener answers CORS to the API's origins only (the
 * printed auth_url's and --public-url's). The facts it rests on are checked here against a running
 * server and the command line, so that a change to any of them fails this test until the page says
 * what then happens. The browser itself: test/browser/docs-camera.test.ts.
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
  let direct: TestServer;
  let proxied: TestServer;
  beforeAll(async () => {
    [direct, proxied] = await Promise.all([
      startTestServer({}, { listen: true }),
      startTestServer({ publicUrl: "https://hub.example", publicStreamUrl: "https://hub.example:8443" }, { listen: true }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([direct?.close(), proxied?.close()]);
  });

  /** The camera operations' servers, the page's connect-src and who the stream listener's preflight grants. */
  async function facts(t: TestServer, origin: string): Promise<{ servers: string[]; connect: string; granted: string | null }> {
    const { authUrl, streamUrl } = t.server.services.settings;
    const served = (await (await fetch(`${authUrl}/docs/json`)).json()) as Served;
    expect(served.servers.map((s) => s.url)).toEqual(["/"]);
    const servers = Object.entries(served.paths).flatMap(([path, item]) =>
      Object.entries(item).flatMap(([method, op]) => (op.servers ? [`${method} ${path} ${op.servers.map((s) => s.url).join(" ")}`] : [])),
    );
    const page = await fetch(`${authUrl}/docs/`);
    await page.arrayBuffer();
    const connect = /(?:^|; )(connect-src [^;]*)/.exec(page.headers.get("content-security-policy") ?? "")?.[1] ?? "";
    const preflight = await fetch(`${streamUrl}/rest/v0/camera/ABCDEF123456_0_0_1004/snapshot`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "GET" },
    });
    await preflight.arrayBuffer();
    return { servers, connect, granted: preflight.headers.get("access-control-allow-origin") };
  }

  it("names the stream listener for the camera, lets the page connect there, and grants the API's origins only", async () => {
    const { authUrl, streamUrl } = direct.server.services.settings;
    const camera = (url: string): string[] => [`get /rest/v0/camera/{guid}/snapshot ${url}`, `post /rest/v0/camera/{guid}/snapshot ${url}`];
    expect(await facts(direct, authUrl)).toEqual({ servers: camera(streamUrl), connect: `connect-src 'self' ${streamUrl}`, granted: authUrl });
    expect((await facts(direct, "http://evil.example")).granted).toBeNull();
    expect(await facts(proxied, "https://hub.example")).toEqual({
      servers: camera("https://hub.example:8443"),
      connect: "connect-src 'self' https://hub.example:8443",
      granted: "https://hub.example",
    });
    // The options the page names.
    const server = buildProgram({ stdout: () => {}, stderr: () => {}, env: {}, readStdin: () => Promise.resolve("") }).commands.find((c) => c.name() === "server");
    expect(server?.options.map((o) => o.long).filter((f) => /public/.test(f ?? ""))).toEqual(["--public-url", "--public-stream-url"]);

    const tls = readFileSync(`${root}docs/operations-tls.md`, "utf8");
    const section = tls.slice(tls.indexOf("## The API reference behind the proxy"));
    expect(section.startsWith("## The API reference behind the proxy"), "the section is on the page").toBe(true);
    const text = section.slice(0, section.indexOf("\n## ", 3) === -1 ? undefined : section.indexOf("\n## ", 3)).replace(/\s+/g, " ");
    for (const said of [
      "`servers` is `/`",
      "`stream_url` the server prints (`http://127.0.0.1:8001`)",
      "`connect-src 'self' https://hub.example:8443`",
      "--public-url https://hub.example --public-stream-url https://hub.example:8443",
      "the printed `auth_url`'s (`http://127.0.0.1:8000`) and this one's",
      "No credentials are allowed",
      "--stream https://hub.example:8443",
    ]) {
      expect(text, said).toContain(said);
    }
  });
});
