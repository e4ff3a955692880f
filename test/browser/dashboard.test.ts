/**
 * The dashboard pages in Chromium (one browser for the file): sign-in, live devices, actuation
 * reaching the block's long-poll, a history chart, claim and unpair, rules, no request to another
 * host, phone width, axe-core. Screenshots of each page go to docs/images/ (committed) with
 * BLOCKKIT_UPDATE_SCREENSHOTS=1, else to a temporary folder.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import type { BrowserContext, Page } from "playwright-core";
import { launchChromium } from "./chromium.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockkitServer } from "../../server/controller.js";
import { freshNode } from "../helpers/core.js";
import { http } from "../helpers/http.js";

const PASSWORD = "a long dashboard password";
/**
 * Screenshots go to docs/images/ (committed) only when asked (BLOCKKIT_UPDATE_SCREENSHOTS=1): a test
 * run must not rewrite tracked files. Otherwise they go to a folder of the run's own.
 */
const IMAGES =
  process.env.BLOCKKIT_UPDATE_SCREENSHOTS === "1"
    ? join(import.meta.dirname, "..", "..", "docs", "images")
    : mkdtempSync(join(tmpdir(), "blockkit-screens-"));
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

describe("dashboard pages in Chromium", () => {
  let dir: string;
  let server: BlockkitServer;
  let authUrl: string;
  let base: string;
  let token: string;
  let browser: BrowserContext;
  let page: Page;
  const node = freshNode("DASHBOARD");
  let block: string;
  const guid = (G: string, D: number) => `${node}_${G}_0_${D}`;
  const TEMP = guid("0", 9);
  const RELAY = guid("1", 1002);
  const LED = guid("2", 1007);
  const requests: string[] = [];
  const consoleErrors: string[] = [];

  const post = async (kind: "data" | "config", body: unknown): Promise<void> => {
    const res = await http(`${base}/block/${node}/${kind}`, { method: "POST", json: body, headers: { "x-service-token": block } });
    expect(res.status).toBe(200);
  };
  /** The commands the block receives on its long-poll (waits up to the hold). */
  const commands = async (): Promise<{ G: string; D: number; DA: string }[]> => {
    const res = await http<{ DEVICE: { G: string; D: number; DA: string }[] }>(`${base}/block/${node}/commands`, { headers: { "x-service-token": block } });
    return res.body.DEVICE;
  };
  const api = <T>(method: string, path: string, json?: unknown) =>
    http<{ data: T }>(`${base}${path}${path.includes("?") ? "&" : "?"}user_access_token=${token}`, { method, json });

  async function shot(name: string): Promise<void> {
    const file = join(IMAGES, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    expect(statSync(file).size).toBeGreaterThan(5000);
  }

  /** No horizontal scroll at phone width, and axe-core finds nothing serious or critical. */
  async function checkPage(label: string): Promise<void> {
    const wide = page.viewportSize();
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate("document.documentElement.scrollWidth"), `${label} at 390 px`).toBeLessThanOrEqual(390);
    if (wide) await page.setViewportSize(wide);
    // Evaluated through the DevTools protocol: the page's CSP (script-src 'self') stays as it is.
    await page.evaluate(AXE);
    const violations = (await page.evaluate(`axe.run({ resultTypes: ["violations"] }).then((r) => r.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => v.id + ": " + v.nodes.map((n) => n.target.join(" ")).join(", ")))`)) as string[];
    expect(violations, label).toEqual([]);
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-dashboard-"));
    mkdirSync(IMAGES, { recursive: true });
    server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: join(dir, "data"), logger: pino({ level: "silent" }), pollHoldSeconds: 5 });
    authUrl = (await server.start()).authUrl;
    base = `${authUrl}/rest/v0`;
    token = (await server.services.auth.createUser("alice", { password: PASSWORD })).token;
    const activated = await http<{ token: string }>(`${base}/block/${node}/activate?user_access_token=${token}`);
    block = activated.body.token;
    // A simulated block: a thermometer with a day of history, a relay and an LED, plugged in.
    const now = Date.now();
    for (let i = 24; i >= 1; i--) await post("data", { G: "0", V: 0, D: 9, DA: String(18 + Math.sin(i / 3) * 3), TIMESTAMP: now - i * 3600_000 });
    await post("config", { G: "1", V: 0, D: 1002, type: "PLUGIN" });
    await post("data", { G: "1", V: 0, D: 1002, DA: "0" });
    await post("data", { G: "2", V: 0, D: 1007, DA: "00FF00" });
    browser = await launchChromium(join(dir, "profile"), { viewport: { width: 1000, height: 900 }, colorScheme: "light" });
    page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    page.on("request", (r) => requests.push(r.url()));
    page.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(`${m.location().url}: ${m.text()}`);
    });
    page.on("pageerror", (err) => consoleErrors.push(`${page.url()}: ${err.message}`));
    page.on("dialog", (d) => void d.accept());
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (process.env.BLOCKKIT_UPDATE_SCREENSHOTS !== "1") rmSync(IMAGES, { recursive: true, force: true });
  });

  it("signs in, shows the block's devices and updates a reading live without a reload", async () => {
    await page.goto(`${authUrl}/dashboard`);
    expect(new URL(page.url()).pathname).toBe("/auth/login");
    await page.fill("input[name=username]", "alice");
    await page.fill("input[name=password]", PASSWORD);
    await page.click("button[type=submit]:has-text('Sign in')");
    await page.waitForURL(`${authUrl}/dashboard`);
    const temp = page.locator(`li[data-guid="${TEMP}"]`);
    await expect.poll(() => temp.locator(".value").innerText()).toMatch(/^\d/);
    expect(await page.locator(`li[data-guid="${RELAY}"] .plugged`).innerText()).toBe("plugged in");
    expect(await page.locator(`section[data-node="${node}"] li.device`).count()).toBe(3);
    await expect.poll(() => page.locator("#live").getAttribute("data-state")).toBe("live");
    await page.evaluate("window.notReloaded = true");
    await post("data", { G: "0", V: 0, D: 9, DA: "23.75" });
    await expect.poll(() => temp.locator(".value").innerText(), { timeout: 5000 }).toBe("23.75");
    await post("config", { G: "1", V: 0, D: 1002, type: "UNPLUG" });
    await expect.poll(() => page.locator(`li[data-guid="${RELAY}"] .plugged`).innerText()).toBe("unplugged");
    await post("config", { G: "1", V: 0, D: 1002, type: "PLUGIN" });
    expect(await page.evaluate("window.notReloaded")).toBe(true);
    // Renaming is a PUT signed by the session cookie and the page's CSRF token.
    await temp.locator("input[name=shortName]").fill("Living room");
    await temp.locator("button:has-text('Save')").click();
    await expect.poll(async () => (await api<{ shortName: string }>("GET", `/device/${TEMP}`)).body.data.shortName).toBe("Living room");
    await shot("dashboard-devices");
    await checkPage("/dashboard");
    // Dark, following the system setting, and on a phone.
    await page.emulateMedia({ colorScheme: "dark" });
    await page.setViewportSize({ width: 390, height: 844 });
    await shot("dashboard-devices-phone-dark");
    await checkPage("/dashboard, dark");
    await page.emulateMedia({ colorScheme: "light" });
    await page.setViewportSize({ width: 1000, height: 900 });
  }, 30_000);

  it("toggles the relay and sets the LED colour: each command reaches the block's long-poll", async () => {
    await page.goto(`${authUrl}/dashboard/device/${RELAY}`);
    const toggle = page.locator("#toggle");
    expect(await toggle.getAttribute("aria-checked")).toBe("false");
    await toggle.click();
    await expect.poll(() => toggle.getAttribute("aria-checked")).toBe("true");
    expect(await commands()).toEqual([expect.objectContaining({ G: "1", D: 1002, DA: "1" })]);
    await checkPage("relay page");

    await page.goto(`${authUrl}/dashboard/device/${LED}`);
    await page.fill("#colour", "#ff8000");
    await page.click("button:has-text('Set colour')");
    await expect.poll(() => page.locator("#flash").innerText()).toContain("done");
    expect(await commands()).toEqual([expect.objectContaining({ G: "2", D: 1007, DA: "FF8000" })]);
  }, 30_000);

  it("draws a history chart with interval and fn pickers", async () => {
    await page.goto(`${authUrl}/dashboard/device/${TEMP}`);
    await page.locator(".chart canvas").waitFor();
    expect(await page.locator("#chart-note").innerText()).toMatch(/^2[4-9] points$/);
    await page.selectOption("#interval", "1day");
    await page.selectOption("#fn", "max");
    await expect.poll(() => page.locator("#chart-note").innerText()).toMatch(/^[12] points$/);
    await page.selectOption("#interval", "raw");
    await expect.poll(() => page.locator("#chart-note").innerText()).toMatch(/^2[4-9] points$/);
    await shot("dashboard-device");
    await checkPage("device page");
  }, 30_000);

  it("claims a block awaiting activation and unpairs it", async () => {
    const other = freshNode("DASHCLAIM");
    await page.goto(`${authUrl}/dashboard/blocks`);
    await expect.poll(() => page.locator("#live").getAttribute("data-state")).toBe("live");
    const held = http<{ token: string }>(`${base}/block/${other}/activate`);
    const row = page.locator(`#awaiting-list li[data-node="${other}"]`);
    await row.waitFor();
    await shot("dashboard-blocks");
    await checkPage("blocks page");
    await row.locator("button:has-text('Claim')").click();
    const activated = await held;
    expect(activated.status).toBe(200);
    expect(activated.body.token).toMatch(/.{20,}/);
    const mine = page.locator(`#block-list li[data-node="${other}"]`);
    await mine.waitFor();
    await mine.locator("button:has-text('Unpair')").click();
    await mine.waitFor({ state: "detached" });
    expect(Object.keys((await api<Record<string, unknown>>("GET", "/block")).body.data)).toEqual([node]);
  }, 30_000);

  it("suspends and resumes a rule, shows its runs, and shows the server's validation message at the field", async () => {
    const rule = {
      shortName: "Warm: relay on",
      preconditions: [{ handler: "serviceRangeToggle", params: { guid: TEMP, between: 30, and: 40 } }],
      actions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "1" } }],
    };
    const rid = (await api<{ rid: string }>("POST", "/rule", rule)).body.data.rid;
    await page.goto(`${authUrl}/dashboard/rules`);
    const item = page.locator(`li[data-rid="${rid}"]`);
    await item.locator("summary").click();
    await expect.poll(() => item.locator(".history").innerText()).toContain("Not run yet");
    await expect.poll(() => page.locator("#live").getAttribute("data-state")).toBe("live");
    await post("data", { G: "0", V: 0, D: 9, DA: "35" });
    await expect.poll(() => item.locator(".history").innerText()).toContain("ok");
    expect((await commands()).some((c) => c.G === "1" && c.DA === "1")).toBe(true);

    await item.locator("button:has-text('Suspend')").click();
    await expect.poll(() => page.locator(`li[data-rid="${rid}"] .state`).innerText()).toBe("suspended");
    expect((await api<{ suspended: boolean }>("GET", `/rule/${rid}`)).body.data.suspended).toBe(true);
    await page.locator(`li[data-rid="${rid}"] button:has-text('Resume')`).click();
    await expect.poll(() => page.locator(`li[data-rid="${rid}"] .state`).innerText()).toBe("active");
    expect((await api<{ suspended: boolean }>("GET", `/rule/${rid}`)).body.data.suspended).toBe(false);

    await page.fill("#rule-json", JSON.stringify({ shortName: "bad", preconditions: [{ handler: "serviceChange", params: { guid: "NOSUCHDEVICE0001_0_0_9", to: "1" } }], actions: [] }));
    await page.click("button:has-text('Create rule')");
    await expect.poll(() => page.locator("#rule-error").innerText()).toMatch(/NOSUCHDEVICE0001_0_0_9|actions/);
    expect(await page.locator("#rule-json").getAttribute("aria-invalid")).toBe("true");
    await shot("dashboard-rules");
    await checkPage("rules page");
  }, 30_000);

  it("made no request to another host and logged no error", async () => {
    expect(requests.length).toBeGreaterThan(10);
    const origin = new URL(authUrl).origin;
    const wsOrigin = origin.replace(/^http/, "ws");
    expect(requests.filter((u) => !u.startsWith(origin) && !u.startsWith(wsOrigin) && !u.startsWith("data:"))).toEqual([]);
    expect(requests.some((u) => u.endsWith("/dashboard/assets/uPlot.js"))).toBe(true);
    expect(consoleErrors.filter((e) => !/status of (400|404)/.test(e))).toEqual([]);
  });
});
