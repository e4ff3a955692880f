import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashToken } from "../../../server/services/secrets.js";
import { rest } from "../../helpers/server.js";
import { type Fixture, PASSWORD, fixture } from "./fixture.js";
import { type PageClient, findForm, forms } from "./page-client.js";

/** The text of the element with this id (the secrets shown once). */
function shown(html: string, id: string): string {
  const m = new RegExp(`<code id="${id}">([^<]*)</code>`).exec(html);
  if (!m?.[1]) throw new Error(`no #${id} in the page`);
  return m[1];
}

describe("settings page", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture();
  });
  afterAll(async () => {
    await f.close();
  });

  async function signedIn(): Promise<{ id: number; client: PageClient; settings: () => Promise<string> }> {
    const u = await f.user("sam");
    expect((await u.client.login(u.name, PASSWORD)).statusCode).toBe(303);
    return { id: u.id, client: u.client, settings: async () => (await u.client.get("/settings")).body };
  }
  const devices = (query: string) => f.t.server.api.inject({ method: "GET", url: rest(`/devices?${query}`) });

  it("enables the personal token, shows it once, replaces and revokes it", async () => {
    const { client, settings } = await signedIn();
    const page = await settings();
    expect(page).toContain("User access token");
    const enabled = await client.submit(page, "/settings/token", {}, { action: "enable" });
    expect(enabled.statusCode).toBe(200);
    const token = shown(enabled.body, "user-access-token");
    expect((await devices(`user_access_token=${token}`)).statusCode).toBe(200);
    const again = await settings();
    expect(again).not.toContain(token);
    expect(again).toContain("Enabled");
    const replaced = shown((await client.submit(again, "/settings/token", {}, { action: "enable" })).body, "user-access-token");
    expect((await devices(`user_access_token=${token}`)).statusCode).toBe(401);
    expect((await devices(`user_access_token=${replaced}`)).statusCode).toBe(200);
    const revoked = await client.submit(await settings(), "/settings/token", {}, { action: "revoke" });
    expect(revoked.statusCode).toBe(303);
    expect((await devices(`user_access_token=${replaced}`)).statusCode).toBe(401);
    expect(await settings()).toContain("Not enabled.");
  });

  it("enables and revokes the virtual block token, which then creates devices", async () => {
    const { client, settings } = await signedIn();
    const page = await client.submit(await settings(), "/settings/virtual-block-token", {}, { action: "enable" });
    const vbt = shown(page.body, "virtual-block-token");
    const post = () =>
      f.t.server.api.inject({
        method: "POST",
        url: rest("/block/VIRTUAL00001X/data"),
        headers: { "x-service-token": vbt },
        payload: { G: "0", V: 0, D: 9, DA: "20" },
      });
    expect((await post()).statusCode).toBe(200);
    const list = await client.submit(await settings(), "/settings/virtual-block-token", {}, { action: "revoke" });
    expect(list.statusCode).toBe(303);
    expect((await post()).statusCode).toBe(401);
  });

  it("adds the Webhooks and SMS devices and lists claimed blocks with their last activity", async () => {
    const u = await f.user("sam");
    await u.client.login(u.name, PASSWORD);
    let page = (await u.client.get("/settings")).body;
    expect(page).toContain("No block claimed yet.");
    for (const device of ["webhook", "sms"]) {
      expect((await u.client.submit(page, "/settings/services", {}, { device })).statusCode).toBe(303);
      page = (await u.client.get("/settings")).body;
      expect(() => findForm(page, "/settings/services", { device })).toThrow();
    }
    const list = (await devices(`user_access_token=${u.token}`)).json() as { data: Record<string, { device_type: string }> };
    expect(Object.values(list.data).map((d) => d.device_type).sort()).toEqual(["sms", "webhook"]);
    await f.t.activate("SETTINGSBLK01", u.token);
    page = (await u.client.get("/settings")).body;
    expect(page).toContain("SETTINGSBLK01");
    expect(page).toContain("last active 2026-01-01 00:00 UTC");
    expect(page).not.toContain("SVC0");
  });

  it("registers an application, shows its secret once (stored hashed), lists and deletes it", async () => {
    const { id, client, settings } = await signedIn();
    const res = await client.submit(await settings(), "/settings/apps", { name: "Garden <app>", redirect_uri: "https://garden.example/cb" });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("Garden &lt;app&gt;");
    const clientId = shown(res.body, "client-id");
    const secret = shown(res.body, "client-secret");
    const row = await f.t.server.services.store.oauthApps.get(clientId);
    expect(row).toMatchObject({ user_id: id, redirect_uri: "https://garden.example/cb", secret_hash: hashToken(secret) });
    const page = await settings();
    expect(page).toContain(clientId);
    expect(page).not.toContain(secret);
    // A token issued to the app appears as a grant, and "Revoke its tokens" withdraws it.
    const token = await f.t.server.services.auth.issue(id, "oauth", { clientId });
    expect(await settings()).toContain("1 active token");
    await client.submit(await settings(), "/settings/apps/revoke", {}, { client_id: clientId });
    expect((await devices(`access_token=${token}`)).statusCode).toBe(401);
    const again = await f.t.server.services.auth.issue(id, "oauth", { clientId });
    expect((await client.submit(await settings(), "/settings/apps/delete", {}, { client_id: clientId })).statusCode).toBe(303);
    expect(await f.t.server.services.store.oauthApps.get(clientId)).toBeNull();
    expect((await devices(`access_token=${again}`)).statusCode).toBe(401);
    expect(await settings()).not.toContain(clientId);
  });

  it("lets a user withdraw an application's access to their account", async () => {
    const { id, client, settings } = await signedIn();
    const dev = await signedIn();
    const reg = await dev.client.submit(await dev.settings(), "/settings/apps", { name: "Thermo", redirect_uri: "http://127.0.0.1:9/cb" });
    const clientId = shown(reg.body, "client-id");
    const token = await f.t.server.services.auth.issue(id, "oauth", { clientId });
    const page = await settings();
    expect(page).toContain("Applications with access to your account");
    expect((await client.submit(page, "/settings/grants/revoke", {}, { client_id: clientId })).statusCode).toBe(303);
    expect((await devices(`access_token=${token}`)).statusCode).toBe(401);
  });

  it("refuses bad application input with the reason on the page", async () => {
    const { client, settings } = await signedIn();
    for (const [name, uri, reason] of [
      ["", "https://a.example/cb", "name: give the application a name"],
      ["A", "not a url", "is not an absolute URL"],
      ["A", "javascript:alert(1)", "use an http or https URL"],
      ["A", "https://a.example/cb#frag", "no #fragment"],
    ] as const) {
      const res = await client.submit(await settings(), "/settings/apps", { name, redirect_uri: uri });
      expect(res.statusCode).toBe(400);
      expect(res.body).toContain(reason);
    }
  });

  it("does not touch another user's application", async () => {
    const owner = await signedIn();
    const reg = await owner.client.submit(await owner.settings(), "/settings/apps", { name: "Mine", redirect_uri: "https://m.example/cb" });
    const clientId = shown(reg.body, "client-id");
    const other = await signedIn();
    const page = await other.settings();
    const fields = findForm(page, "/settings/token", { action: "enable" }).fields;
    const res = await other.client.post("/settings/apps/delete", { csrf: fields.csrf as string, client_id: clientId });
    expect(res.statusCode).toBe(404);
    expect(await f.t.server.services.store.oauthApps.get(clientId)).not.toBeNull();
  });

  it("refuses a settings post without its CSRF field, and changes nothing", async () => {
    const { id, client, settings } = await signedIn();
    await settings();
    const res = await client.post("/settings/token", { action: "enable", csrf: "nope" });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("did not come from this site");
    expect(await f.t.server.services.store.tokens.list({ user_id: id, kind: "user" })).toHaveLength(1);
    const missing = await client.post("/settings/virtual-block-token", { action: "enable" });
    expect(missing.statusCode).toBe(403);
    expect(await f.t.server.services.store.tokens.list({ user_id: id, kind: "vblock" })).toHaveLength(0);
  });

  it("puts the hidden CSRF field in every form, and each form posted back as it is succeeds", async () => {
    const { id, client, settings } = await signedIn();
    const reg = await client.submit(await settings(), "/settings/apps", { name: "Every", redirect_uri: "https://e.example/cb" });
    const clientId = shown(reg.body, "client-id");
    await f.t.server.services.auth.issue(id, "oauth", { clientId });
    const page = await settings();
    const all = forms(page);
    expect(all.map((x) => x.action).sort()).toEqual(
      [
        "/auth/logout",
        "/settings/token",
        "/settings/token",
        "/settings/virtual-block-token",
        "/settings/services",
        "/settings/services",
        "/settings/apps/revoke",
        "/settings/apps/delete",
        "/settings/apps",
        "/settings/grants/revoke",
      ].sort(),
    );
    for (const form of all) expect(form.fields.csrf, form.action).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    // Forms without typed inputs work with their own hidden fields alone.
    for (const form of all.filter((x) => x.action !== "/settings/apps" && x.action !== "/auth/logout")) {
      const res = await client.post(form.action, form.fields);
      expect([200, 303], `${form.action} ${res.body.slice(0, 200)}`).toContain(res.statusCode);
    }
  });

  it("sends signed-out posts to the login page", async () => {
    const res = await f.client().post("/settings/token", { action: "enable" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/auth/login?next=%2Fsettings");
  });
});
