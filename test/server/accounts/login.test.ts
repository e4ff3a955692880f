import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashToken } from "../../../server/services/secrets.js";
import { type Fixture, PASSWORD, fixture } from "./fixture.js";
import { type PageClient, findForm } from "./page-client.js";

function sessionId(client: PageClient): string {
  const cookie = client.cookies.get("bk_session");
  if (!cookie) throw new Error("no session cookie");
  return cookie.slice(0, cookie.lastIndexOf("."));
}

describe("login and sessions", () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture();
  });
  afterAll(async () => {
    await f.close();
  });

  it("shows a login form with username, password and a hidden CSRF field", async () => {
    const client = f.client();
    const page = await client.get("/auth/login");
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    const form = findForm(page.body, "/auth/login");
    expect(form.inputs).toEqual(expect.arrayContaining(["username", "password", "csrf"]));
    expect(form.fields.csrf).toMatch(/^[A-Za-z0-9_-]{20,}$/);
  });

  it("signs in, sets a signed HttpOnly SameSite cookie, and stores only the hash of the session id", async () => {
    const { name: alice, client } = await f.user("alice");
    const res = await client.login(alice, PASSWORD);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/settings");
    const setCookie = ([] as string[]).concat(res.headers["set-cookie"] ?? []).find((c) => c.startsWith("bk_session="));
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Lax/);
    const id = sessionId(client);
    const db = (f.t.server.services.store as unknown as { db: import("better-sqlite3").Database }).db;
    const rows = db.prepare("SELECT hash FROM sessions").pluck().all() as string[];
    expect(rows).toContain(hashToken(id));
    expect(rows).not.toContain(id);
    const settings = await client.get("/settings");
    expect(settings.statusCode).toBe(200);
    expect(settings.body).toContain(`Signed in as <strong>${alice}</strong>`);
  });

  it("answers a clear page on a wrong password or an unknown user, without a session", async () => {
    const { name: alice, client } = await f.user("alice");
    for (const [user, pw] of [[alice, "wrong"], ["nobody", PASSWORD]] as const) {
      const res = await client.login(user, pw);
      expect(res.statusCode).toBe(401);
      expect(res.body).toContain("Wrong user name or password.");
      expect(findForm(res.body, "/auth/login").inputs).toContain("password");
      expect(client.cookies.has("bk_session")).toBe(false);
    }
  });

  it("refuses a login post without the right CSRF field", async () => {
    const { name: alice, client } = await f.user("alice");
    const page = await client.get("/auth/login");
    const fields = findForm(page.body, "/auth/login").fields;
    const forged = await client.post("/auth/login", { ...fields, csrf: "forged", username: alice, password: PASSWORD });
    expect(forged.statusCode).toBe(403);
    expect(forged.body).toContain("did not come from this site");
    // The field of another browser does not fit this one's cookie.
    const other = f.client();
    await other.get("/auth/login");
    const crossed = await other.post("/auth/login", { ...fields, username: alice, password: PASSWORD });
    expect(crossed.statusCode).toBe(403);
    expect(other.cookies.has("bk_session")).toBe(false);
  });

  it("keeps signed-out visitors out of /settings and brings them back after login", async () => {
    const { name: alice, client } = await f.user("alice");
    const res = await client.get("/settings");
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/auth/login?next=%2Fsettings");
    const login = await client.login(alice, PASSWORD, "/settings");
    expect(login.headers.location).toBe("/settings");
    // An outside address in next is not followed.
    for (const next of ["//evil.example/x", "/\\evil.example", "/\t/evil.example", "https://evil.example/"]) {
      const c = f.client();
      expect((await c.login(alice, PASSWORD, next)).headers.location).toBe("/settings");
    }
  });

  it("ignores a tampered or expired session cookie", async () => {
    const { name: alice, client } = await f.user("alice");
    await client.login(alice, PASSWORD);
    const good = client.cookies.get("bk_session") as string;
    client.cookies.set("bk_session", `${good.slice(0, -2)}xx`);
    expect((await client.get("/settings")).statusCode).toBe(303);
    client.cookies.set("bk_session", good);
    expect((await client.get("/settings")).statusCode).toBe(200);
    f.now += 7 * 24 * 3600 * 1000 + 1;
    expect((await client.get("/settings")).statusCode).toBe(303);
  });

  it("logs out through the header form and forgets the session", async () => {
    const { name: alice, client } = await f.user("alice");
    await client.login(alice, PASSWORD);
    const id = sessionId(client);
    const settings = await client.get("/settings");
    const out = await client.submit(settings, "/auth/logout");
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe("/auth/login");
    expect(await f.t.server.services.store.sessions.find(hashToken(id))).toBeNull();
    expect((await client.get("/settings")).statusCode).toBe(303);
  });

  it("rate-limits login attempts, then lets them through again as time passes", async () => {
    const { name: alice, client } = await f.user("alice");
    for (let i = 0; i < 10; i++) expect((await client.login(alice, `wrong-${i}`)).statusCode).toBe(401);
    const limited = await client.login(alice, PASSWORD);
    expect(limited.statusCode).toBe(429);
    expect(limited.body).toContain("Too many login attempts");
    expect(findForm(limited.body, "/auth/login").inputs).toContain("password");
    expect(client.cookies.has("bk_session")).toBe(false);
    f.now += 30_000;
    expect((await client.login(alice, PASSWORD)).statusCode).toBe(303);
  });

  it("limits attempts per address and per (address, user): wrong passwords from one address lock out no one else", async () => {
    const { name: admin, client: attacker } = await f.user("admin");
    for (let i = 0; i < 10; i++) expect((await attacker.login(admin, `wrong-${i}`)).statusCode).toBe(401);
    expect((await attacker.login(admin, PASSWORD)).statusCode).toBe(429);
    // The owner, from another address, with the right password.
    expect((await f.client().login(admin, PASSWORD)).statusCode).toBe(303);
    // The attacker's address still has attempts for other names, up to its own bound (30).
    const { name: bob } = await f.user("bob");
    for (let i = 0; i < 10; i++) expect((await attacker.login(bob, `wrong-${i}`)).statusCode).toBe(401);
    for (let i = 0; i < 9; i++) expect((await attacker.login(`nobody${i}`, "x")).statusCode).toBe(401);
    expect((await attacker.login("nobody-else", "x")).statusCode).toBe(429);
  });

  it("sends the security headers on every page", async () => {
    const signedIn = await f.user("alice");
    await signedIn.client.login(signedIn.name, PASSWORD);
    const pages = [
      [f.client(), "/auth/login", 200],
      [f.client(), "/settings", 303],
      [signedIn.client, "/settings", 200],
      [signedIn.client, "/oauth/authorize?client_id=none", 400],
    ] as const;
    for (const [client, url, status] of pages) {
      const res = await client.get(url);
      expect(res.statusCode).toBe(status);
      expect(res.headers["content-security-policy"]).toMatch(/frame-ancestors 'none'/);
      expect(res.headers["content-security-policy"]).toMatch(/default-src 'none'/);
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(res.headers["referrer-policy"]).toBe("no-referrer");
      expect(res.headers["x-frame-options"]).toBe("DENY");
      expect(res.headers["cache-control"]).toBe("no-store");
    }
  });
});
