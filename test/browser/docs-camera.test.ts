/**
 * The camera operations from the API reference's page in Chromium: the page ({auth_url}/docs) and
 * the stream listener ({stream_url}) are two origins, so a fetch from the page needs the page's
 * policy to allow connecting there and the stream listener's CORS (server/http/stream-cors.ts).
 * A page of any other origin gets no answer it can read, and its upload is stopped at the preflight.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockkitServer } from "../../server/controller.js";
import { waitFor } from "../helpers/wait.js";
import { launchChromium } from "./chromium.js";

const TOKEN = "docs-camera-token-0123456";
const NODE = "DOCSCAMERA01";
const CAM = `${NODE}_0_0_1004`;
const JPEG = [0xff, 0xd8, 0xff, 0xe0, ...Buffer.from("a tiny picture"), 0xff, 0xd9];

/** What a fetch in the page came to: its status, type and bytes, or the error it threw. */
type Outcome = { status: number; type: string | null; bytes: number[] } | { error: string };

function pageFetch(page: Page, url: string, init: { method?: string; headers?: Record<string, string>; body?: number[] } = {}): Promise<Outcome> {
  return page.evaluate(
    async ({ url, init }) => {
      try {
        const r = await fetch(url, { method: init.method, headers: init.headers, body: init.body ? new Uint8Array(init.body) : undefined });
        return { status: r.status, type: r.headers.get("content-type"), bytes: Array.from(new Uint8Array(await r.arrayBuffer())) };
      } catch (err) {
        return { error: String(err) };
      }
    },
    { url, init },
  );
}

describe("the camera operations from the API reference's page", () => {
  let dir: string;
  let server: BlockkitServer;
  let authUrl: string;
  let streamUrl: string;
  let blockToken: string;
  let browser: BrowserContext;
  /** A page of another origin: a plain server of the test's own. */
  let elsewhere: Server;
  let elsewhereUrl: string;
  const problems: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-docs-camera-"));
    server = new BlockkitServer({ port: 0, streamPort: 0, adminToken: TOKEN, dataDir: join(dir, "data"), logger: pino({ level: "silent" }) });
    ({ authUrl, streamUrl } = await server.start());
    const act = await fetch(`${authUrl}/rest/v0/block/${NODE}/activate?user_access_token=${TOKEN}`);
    blockToken = ((await act.json()) as { token: string }).token;
    const data = await fetch(`${authUrl}/rest/v0/block/${NODE}/data`, {
      method: "POST",
      headers: { "x-service-token": blockToken, "content-type": "application/json" },
      body: JSON.stringify({ G: "0", V: 0, D: 1004, DA: "0" }),
    });
    expect(data.status).toBe(200);
    elsewhere = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>elsewhere</title>"));
    await new Promise<void>((done) => elsewhere.listen(0, "127.0.0.1", done));
    elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/`;
    browser = await launchChromium(join(dir, "profile"));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await new Promise((done) => (elsewhere ? elsewhere.close(done) : done(undefined)));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The answered requests of a route, by method and status (blockkit_http_requests_total). */
  async function requestsOn(route: string): Promise<{ method: string; status: string; value: number }[]> {
    const metric = await server.services.metrics.registry.getSingleMetric("blockkit_http_requests_total")?.get();
    return (metric?.values ?? [])
      .filter((v) => v.labels.route === route)
      .map((v) => ({ method: String(v.labels.method), status: String(v.labels.status), value: v.value }));
  }

  async function docsPage(): Promise<Page> {
    const page = await browser.newPage();
    page.setDefaultTimeout(15_000);
    page.on("console", (m) => {
      if (m.type() === "error" && !m.text().includes("status of 401")) problems.push(`console: ${m.text()}`);
    });
    await page.goto(`${authUrl}/docs`);
    return page;
  }

  it("takes a snapshot: the page's GET waits, its block upload (a preflighted POST) answers it", async () => {
    const page = await docsPage();
    const snapshot = pageFetch(page, `${streamUrl}/rest/v0/camera/${CAM}/snapshot?user_access_token=${TOKEN}`);
    // The GET reached the server: the snapshot command is queued for the camera's block.
    await waitFor("the snapshot command", async () => {
      const rows = await server.services.store.commands.pending(NODE, Date.now());
      return rows.some((r) => r.guid === CAM && r.da === "1");
    }, 10_000);
    const upload = await pageFetch(page, `${streamUrl}/rest/v0/camera/${CAM}/snapshot`, {
      method: "POST",
      headers: { "X-Service-Token": blockToken, "Content-Type": "image/jpeg" },
      body: JPEG,
    });
    expect(upload).toMatchObject({ status: 200, type: expect.stringContaining("application/json") });
    expect(JSON.parse(Buffer.from((upload as { bytes: number[] }).bytes).toString())).toEqual({ result: 1, error: null, id: 0 });
    expect(await snapshot).toEqual({ status: 200, type: "image/jpeg", bytes: JPEG });
    expect(problems).toEqual([]);
  }, 60_000);

  it("runs \"Try it out\" on the camera GET: the stream listener's answer (401 without a token) is shown", async () => {
    const page = await docsPage();
    const op = page.locator(".opblock-get", { has: page.locator('[data-path="/rest/v0/camera/{guid}/snapshot"]') });
    await op.locator(".opblock-summary").click();
    await op.locator("button.try-out__btn").click();
    await op.locator('tr[data-param-name="guid"] input').fill(CAM);
    const answered = page.waitForResponse((r) => r.url().startsWith(`${streamUrl}/rest/v0/camera/`));
    await op.locator("button.execute").click();
    expect((await answered).status()).toBe(401);
    await expect.poll(() => op.locator(".live-responses-table .response .response-col_status").first().innerText()).toContain("401");
    expect(problems).toEqual([]);
  }, 60_000);

  it("gives a page of another origin nothing: no answer to read, no upload past the preflight", async () => {
    const page = await browser.newPage();
    await page.goto(elsewhereUrl);
    const posts = async (): Promise<number> => (await requestsOn("/rest/v0/camera/:guid/snapshot")).filter((r) => r.method === "POST").reduce((n, r) => n + r.value, 0);
    const postsBefore = await posts();
    const get = await pageFetch(page, `${streamUrl}/rest/v0/camera/${CAM}/snapshot`);
    expect(get).toEqual({ error: expect.stringContaining("Failed to fetch") });
    const upload = await pageFetch(page, `${streamUrl}/rest/v0/camera/${CAM}/snapshot`, {
      method: "POST",
      headers: { "X-Service-Token": blockToken, "Content-Type": "image/jpeg" },
      body: JPEG,
    });
    expect(upload).toEqual({ error: expect.stringContaining("Failed to fetch") });
    // The browser asked first (OPTIONS, refused 403) and never sent the upload itself.
    const answered = await requestsOn("/rest/v0/camera/:guid/snapshot");
    expect(answered).toContainEqual({ method: "OPTIONS", status: "403", value: 1 });
    expect(await posts()).toBe(postsBefore);
  }, 60_000);
});
