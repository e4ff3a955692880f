/** The API reference at {auth_url}/docs in Chromium: it renders every operation, and every request stays on the server. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import type { BrowserContext } from "playwright-core";
import { launchChromium } from "./chromium.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockkitServer } from "../../server/controller.js";
import { openapiDocument } from "../../server/http/openapi/index.js";


describe("the API reference page in Chromium", () => {
  let dir: string;
  let server: BlockkitServer;
  let authUrl: string;
  let browser: BrowserContext;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-docs-"));
    server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: join(dir, "data"), logger: pino({ level: "silent" }) });
    authUrl = (await server.start()).authUrl;
    browser = await launchChromium(join(dir, "profile"));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("renders every operation from the server's own assets, and runs a call against this server", async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(15_000);
    const requests: string[] = [];
    const problems: string[] = [];
    page.on("request", (r) => requests.push(r.url()));
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console: ${m.text()}`);
    });
    page.on("pageerror", (err) => problems.push(`page: ${err.message}`));
    await page.goto(`${authUrl}/docs`);
    const doc = openapiDocument(server.api, server.stream) as { paths: Record<string, Record<string, unknown>>; webhooks: Record<string, Record<string, unknown>> };
    const count = (items: Record<string, Record<string, unknown>>) => Object.values(items).reduce((n, item) => n + Object.keys(item).length, 0);
    // The routes, and the webhook the service sends (callback deliveries).
    const operations = count(doc.paths) + count(doc.webhooks);
    await expect.poll(() => page.locator(".opblock").count(), { timeout: 15_000 }).toBe(operations);
    expect(await page.locator(".info .title").innerText()).toContain("blockkit service API");

    // "Try it out" on GET /healthz calls this server (servers: "/") under the page's policy.
    const health = page.locator(".opblock-get", { has: page.locator('[data-path="/healthz"]') });
    await health.locator(".opblock-summary").click();
    await health.locator("button.try-out__btn").click();
    await health.locator("button.execute").click();
    await expect.poll(() => health.locator(".live-responses-table .response .response-col_status").first().innerText()).toContain("200");

    const elsewhere = requests.filter((u) => !u.startsWith(`${authUrl}/`) && !u.startsWith("data:"));
    expect(elsewhere, "requests to another origin").toEqual([]);
    expect(requests).toContain(`${authUrl}/docs/json`);
    expect(requests).toContain(`${authUrl}/healthz`);
    expect(problems).toEqual([]);
  }, 60_000);
});
