import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashToken } from "../../../server/services/secrets.js";
import { rest } from "../../helpers/server.js";
import { type Fixture, PASSWORD, fixture } from "./fixture.js";
import { REDIRECT, authorize, authorizeUrl, exchange } from "./oauth-flow.js";
import { findForm } from "./page-client.js";

describe("OAuth 2 authorization-code grant", () => {
  let f: Fixture;
  let app: { client_id: string; client_secret: string };
  beforeAll(async () => {
    f = await fixture();
    const dev = await f.user("dev");
    app = await f.t.server.services.accounts.oauth.createApp(dev.id, "Thermo Dash", REDIRECT);
  });
  afterAll(async () => {
    await f.close();
  });

  const params = (extra: Record<string, string> = {}) => ({
    client_id: app.client_id,
    redirect_uri: REDIRECT,
    scope: "all",
    response_type: "code",
    ...extra,
  });
  const grant = (code: string, extra: Record<string, string> = {}) => ({
    client_id: app.client_id,
    client_secret: app.client_secret,
    code,
    grant_type: "authorization_code",
    ...extra,
  });
  async function member() {
    const u = await f.user("member");
    expect((await u.client.login(u.name, PASSWORD)).statusCode).toBe(303);
    return u;
  }
  async function codeFor(u: Awaited<ReturnType<typeof member>>): Promise<string> {
    return (await authorize(u.client, params())).searchParams.get("code") ?? "";
  }
  const api = (url: string, method: "GET" | "PUT" | "DELETE" = "GET", payload?: object) =>
    f.t.server.api.inject({ method, url: rest(url), ...(payload ? { payload } : {}) });

  it("signs in, asks for consent, redirects with code and state, and the token reaches the API", async () => {
    const u = await f.user("member");
    const start = await u.client.get(authorizeUrl(params({ state: "s-42" })));
    expect(start.statusCode).toBe(303);
    const next = new URL(String(start.headers.location), "http://x").searchParams.get("next") ?? "";
    expect(next).toBe(authorizeUrl(params({ state: "s-42" })));
    const login = await u.client.login(u.name, PASSWORD, next);
    expect(login.headers.location).toBe(next);
    const consent = await u.client.get(next);
    expect(consent.statusCode).toBe(200);
    expect(consent.body).toContain("Thermo Dash");
    expect(consent.body).toContain('<button type="submit" name="decision" value="allow">');
    expect(consent.body).toMatch(/<button type="submit" name="decision" value="deny"/);
    expect(consent.headers["content-security-policy"]).toContain("form-action 'self' https://client.example");
    for (const form of [findForm(consent.body, "/oauth/authorize"), findForm(consent.body, "/auth/logout")]) {
      expect(form.fields.csrf).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    }
    const back = new URL(String((await u.client.submit(consent, "/oauth/authorize", { decision: "allow" })).headers.location));
    expect(`${back.origin}${back.pathname}`).toBe("https://client.example/cb");
    expect(back.searchParams.get("from")).toBe("app");
    expect(back.searchParams.get("state")).toBe("s-42");
    const code = back.searchParams.get("code") ?? "";
    expect(code.length).toBeGreaterThan(30);
    expect(await f.t.server.services.store.oauthCodes.consume(code)).toBeNull(); // stored hashed only
    const res = await exchange(f.t.server.api, grant(code, { redirect_uri: REDIRECT }));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["cache-control"]).toBe("no-store");
    const body = res.json() as { access_token: string; token_type: string; scope: string };
    expect(body).toEqual({ access_token: expect.any(String), token_type: "bearer", scope: "all" });
    const row = await f.t.server.services.store.tokens.find(hashToken(body.access_token));
    expect(row).toMatchObject({ kind: "oauth", user_id: u.id, client_id: app.client_id });
    await f.t.activate("OAUTHBLOCK001", u.token);
    const list = await api(`/block?access_token=${body.access_token}`);
    expect(list.statusCode).toBe(200);
    expect(Object.keys((list.json() as { data: object }).data)).toEqual(["OAUTHBLOCK001"]);
  });

  it("accepts a JSON body at the token endpoint", async () => {
    const u = await member();
    const res = await exchange(f.t.server.api, grant(await codeFor(u)), "json");
    expect(res.statusCode).toBe(200);
    expect((await api(`/devices?access_token=${(res.json() as { access_token: string }).access_token}`)).statusCode).toBe(200);
  });

  it("refuses a reused code and revokes the token it bought", async () => {
    const u = await member();
    const code = await codeFor(u);
    const first = (await exchange(f.t.server.api, grant(code))).json() as { access_token: string };
    const again = await exchange(f.t.server.api, grant(code));
    expect(again.statusCode).toBe(400);
    expect(again.json()).toEqual({ result: 0, id: 0, error: "invalid_grant: this code was already used" });
    expect((await api(`/devices?access_token=${first.access_token}`)).statusCode).toBe(401);
  });

  it("refuses an expired code (codes live 10 minutes)", async () => {
    const u = await member();
    const code = await codeFor(u);
    f.now += 10 * 60 * 1000;
    const res = await exchange(f.t.server.api, grant(code));
    expect(res.statusCode).toBe(400);
    expect((res.json() as { error: string }).error).toMatch(/^invalid_grant: this code has expired/);
    const fresh = await codeFor(u);
    f.now += 10 * 60 * 1000 - 1;
    expect((await exchange(f.t.server.api, grant(fresh))).statusCode).toBe(200);
  });

  it("refuses a wrong secret or an unknown client without using up the code", async () => {
    const u = await member();
    const code = await codeFor(u);
    const wrong = await exchange(f.t.server.api, grant(code, { client_secret: `${app.client_secret}x` }));
    expect(wrong.statusCode).toBe(401);
    expect((wrong.json() as { error: string }).error).toMatch(/^invalid_client/);
    const unknown = await exchange(f.t.server.api, grant(code, { client_id: "0".repeat(32) }));
    expect(unknown.statusCode).toBe(401);
    expect((await exchange(f.t.server.api, grant(code))).statusCode).toBe(200);
  });

  it("refuses a redirect_uri that differs from the authorization request's", async () => {
    const u = await member();
    const res = await exchange(f.t.server.api, grant(await codeFor(u), { redirect_uri: "https://client.example/cb" }));
    expect(res.statusCode).toBe(400);
    expect((res.json() as { error: string }).error).toMatch(/^invalid_grant: redirect_uri differs/);
  });

  it("names the fault of a malformed token request", async () => {
    const cases: [Record<string, string>, number, RegExp][] = [
      [grant("c", { grant_type: "password" }), 400, /^unsupported_grant_type/],
      [{ client_id: app.client_id, client_secret: app.client_secret, code: "c" }, 400, /^invalid_request: grant_type is missing/],
      [{ client_id: app.client_id, client_secret: app.client_secret, grant_type: "authorization_code" }, 400, /code is missing/],
      [grant("no-such-code"), 400, /^invalid_grant: unknown code/],
      [{ client_id: app.client_id, code: "c", grant_type: "authorization_code" }, 400, /client_secret is missing/],
    ];
    for (const [body, status, error] of cases) {
      const res = await exchange(f.t.server.api, body);
      expect(res.statusCode).toBe(status);
      expect((res.json() as { error: string }).error).toMatch(error);
    }
  });

  it("shows an error page, and never redirects, for an unknown client or a redirect_uri that is not the registered one", async () => {
    const u = await member();
    for (const p of [
      params({ client_id: "nope" }),
      params({ redirect_uri: "https://client.example/cb" }),
      params({ redirect_uri: "https://evil.example/cb?from=app" }),
      { client_id: app.client_id, scope: "all", response_type: "code" },
    ]) {
      const res = await u.client.get(authorizeUrl(p));
      expect(res.statusCode).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.headers["content-type"]).toMatch(/^text\/html/);
      expect(res.body).toMatch(/client_id|redirect_uri/);
    }
  });

  it("sends unsupported scope or response_type back to the client as an error", async () => {
    const u = await member();
    const cases: [Record<string, string>, string][] = [
      [params({ scope: "read", state: "z" }), "invalid_scope"],
      [params({ scope: "all,devices", state: "z" }), "invalid_scope"],
      [params({ response_type: "token", state: "z" }), "unsupported_response_type"],
      [params({ scope: "", state: "z" }), "invalid_request"],
    ];
    for (const [p, error] of cases) {
      const res = await u.client.get(authorizeUrl(p));
      expect(res.statusCode).toBe(303);
      const to = new URL(String(res.headers.location));
      expect(to.searchParams.get("error")).toBe(error);
      expect(to.searchParams.get("state")).toBe("z");
      expect(to.searchParams.get("code")).toBeNull();
    }
    // "all" may be listed with commas, as the spec allows a list.
    expect((await u.client.get(authorizeUrl(params({ scope: "all,all" })))).statusCode).toBe(200);
  });

  it("redirects with error=access_denied when the user denies", async () => {
    const u = await member();
    const to = await authorize(u.client, params({ state: "d1" }), "deny");
    expect(to.searchParams.get("error")).toBe("access_denied");
    expect(to.searchParams.get("state")).toBe("d1");
    expect(to.searchParams.get("code")).toBeNull();
  });

  it("refuses a consent post without its CSRF field", async () => {
    const u = await member();
    const consent = await u.client.get(authorizeUrl(params()));
    const fields = findForm(consent.body, "/oauth/authorize").fields;
    const res = await u.client.post("/oauth/authorize", { ...fields, csrf: "forged", decision: "allow" });
    expect(res.statusCode).toBe(403);
    expect(res.headers.location).toBeUndefined();
  });

  it("sends a consent post from a browser whose session ended to the login page, without a code", async () => {
    const u = await member();
    const consent = await u.client.get(authorizeUrl(params({ state: "gone" })));
    await u.client.submit(consent, "/auth/logout");
    const res = await u.client.submit(consent, "/oauth/authorize", { decision: "allow" });
    expect(res.statusCode).toBe(303);
    const to = new URL(String(res.headers.location), "http://x");
    expect(to.pathname).toBe("/auth/login");
    expect(to.searchParams.get("next")).toBe(authorizeUrl(params({ state: "gone" })));
  });

  it("stops accepting a token once revoked, and keeps personal and OAuth tokens apart", async () => {
    const u = await member();
    const token = ((await exchange(f.t.server.api, grant(await codeFor(u)))).json() as { access_token: string }).access_token;
    expect((await api(`/devices?user_access_token=${token}`)).statusCode).toBe(401);
    expect((await api(`/devices?access_token=${u.token}`)).statusCode).toBe(401);
    expect((await api(`/devices?access_token=${token}`)).statusCode).toBe(200);
    const settings = (await u.client.get("/settings")).body;
    await u.client.submit(settings, "/settings/grants/revoke", {}, { client_id: app.client_id });
    const res = await api(`/devices?access_token=${token}`);
    expect(res.statusCode).toBe(401);
    expect((res.json() as { error: string }).error).toBe("unknown or revoked access_token");
  });

  it("never lets user A's token reach user B's data", async () => {
    const a = await member();
    const b = await member();
    const tokenA = ((await exchange(f.t.server.api, grant(await codeFor(a)))).json() as { access_token: string }).access_token;
    const blockToken = await f.t.activate("BOWNEDBLOCK01", b.token);
    await f.t.server.api.inject({
      method: "POST",
      url: rest("/block/BOWNEDBLOCK01/data"),
      headers: { "x-service-token": blockToken },
      payload: { G: "0", V: 0, D: 1002, DA: "0" },
    });
    const guid = "BOWNEDBLOCK01_0_0_1002";
    const list = (await api(`/devices?access_token=${tokenA}`)).json() as { data: object };
    expect(Object.keys(list.data)).not.toContain(guid);
    expect((await api(`/device/${guid}?access_token=${tokenA}`)).statusCode).toBe(404);
    expect((await api(`/device/${guid}?access_token=${tokenA}`, "PUT", { shortName: "mine now" })).statusCode).toBe(404);
    expect((await api(`/block/BOWNEDBLOCK01?access_token=${tokenA}`, "DELETE")).statusCode).toBe(404);
    const mine = (await api(`/device/${guid}?user_access_token=${b.token}`)).json() as { data: { shortName: string } };
    expect(mine.data.shortName).not.toBe("mine now");
  });
});
