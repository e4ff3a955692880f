import { cpSync, existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockkitServer } from "../../server/controller.js";
import { launchChromium } from "./chromium.js";
import { type ClientApp, startClientApp } from "./client-app.js";

const PASSWORD = "a long browser password";

describe("settings and OAuth pages in Chromium", () => {
  let dir: string;
  let server: BlockkitServer;
  let authUrl: string;
  let browser: BrowserContext;
  let clientApp: ClientApp;
  let page: Page;
  const consoleErrors: string[] = [];
  const shots: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-browser-"));
    server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: join(dir, "data"), logger: pino({ level: "silent" }) });
    authUrl = (await server.start()).authUrl;
    const { user } = await server.services.auth.createUser("alice", { password: PASSWORD });
    // Start without a personal token: the user enables one on the page.
    await server.services.auth.revoke({ user_id: user.id, kind: "user" });
    clientApp = await startClientApp(authUrl);
    // A fresh profile in the test's folder.
    browser = await launchChromium(join(dir, "profile"), { viewport: { width: 1000, height: 900 } });
    page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    page.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(`${m.location().url}: ${m.text()}`);
    });
    page.on("pageerror", (err) => consoleErrors.push(`${page.url()}: ${err.message}`));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await clientApp?.close();
    await server?.stop();
    // Keep the screenshots for a person to look at when asked to.
    const keep = process.env.BLOCKKIT_KEEP_SCREENSHOTS;
    if (keep && dir && existsSync(join(dir, "shots"))) cpSync(join(dir, "shots"), keep, { recursive: true });
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Screenshots the page and checks that it rendered something. */
  async function shot(name: string): Promise<void> {
    const file = join(dir, "shots", `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    expect(statSync(file).size).toBeGreaterThan(2000);
    expect((await page.locator("body").innerText()).trim().length).toBeGreaterThan(10);
    shots.push(file);
  }
  const devices = (query: string) => fetch(`${authUrl}/rest/v0/devices?${query}`);

  it("signs in, enables a token, registers an app and runs the whole authorization flow", async () => {
    await page.goto(`${authUrl}/settings`);
    expect(new URL(page.url()).pathname).toBe("/auth/login");
    await shot("01-login");

    await page.fill("input[name=username]", "alice");
    await page.fill("input[name=password]", "not the password");
    await page.click("button[type=submit]:has-text('Sign in')");
    await expect.poll(() => page.locator(".error").innerText()).toContain("Wrong user name or password.");
    await shot("02-wrong-password");

    await page.fill("input[name=password]", PASSWORD);
    await page.click("button[type=submit]:has-text('Sign in')");
    await page.waitForURL(`${authUrl}/settings`);
    await shot("03-settings");

    await page.click("form[action='/settings/token'] button:has-text('Enable')");
    const token = (await page.locator("#user-access-token").innerText()).trim();
    await shot("04-token-shown-once");
    expect((await devices(`user_access_token=${token}`)).status).toBe(200);

    await page.click("button:has-text('Add Webhooks')");
    await page.waitForURL(`${authUrl}/settings`);
    expect(await page.locator("form[action='/settings/services'] input[value=webhook]").count()).toBe(0);

    await page.fill("input[name=name]", "Garden Client");
    await page.fill("input[name=redirect_uri]", clientApp.redirectUri);
    await page.click("button:has-text('Register application')");
    const clientId = (await page.locator("#client-id").innerText()).trim();
    const clientSecret = (await page.locator("#client-secret").innerText()).trim();
    await shot("05-app-registered");
    clientApp.credentials = { clientId, clientSecret };

    await page.goto(`${clientApp.url}/start`);
    expect(new URL(page.url()).pathname).toBe("/oauth/authorize");
    expect(await page.locator("h2").first().innerText()).toBe("Garden Client");
    await shot("06-consent");
    await page.click("button[name=decision][value=allow]");
    await page.waitForURL(`${clientApp.url}/cb?**`);
    expect(await page.locator("h1").innerText()).toBe("Connected");
    await shot("07-client-connected");

    // The client holds a token with the user's rights, and uses it.
    const result = clientApp.result;
    expect(result?.guids).toEqual([expect.stringMatching(/_0_0_108$/)]);
    const again = (await (await devices(`access_token=${result?.accessToken ?? ""}`)).json()) as { data: object };
    expect(Object.keys(again.data)).toEqual(result?.guids);

    // The user sees the app among those with access, on a phone-sized screen, and withdraws it.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${authUrl}/settings`);
    expect(await page.locator("text=Applications with access to your account").count()).toBe(1);
    expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
    await shot("08-settings-phone");
    await page.click("form[action='/settings/grants/revoke'] button");
    await page.waitForURL(`${authUrl}/settings`);
    expect((await devices(`access_token=${result?.accessToken ?? ""}`)).status).toBe(401);

    expect(shots).toHaveLength(8);
    // Chromium reports the status of the wrong-password page (401) as a console error; nothing else.
    expect(consoleErrors).toEqual([`${authUrl}/auth/login: Failed to load resource: the server responded with a status of 401 (Unauthorized)`]);
  }, 60_000);
});
