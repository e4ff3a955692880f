import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, rest, startTestServer } from "../../helpers/server.js";
import { authorize, exchange } from "./oauth-flow.js";
import { PageClient } from "./page-client.js";

describe("logs", () => {
  let t: TestServer;
  const lines: string[] = [];
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    t = await startTestServer({ logger: pino({ level: "trace" }, sink) });
  });
  afterAll(async () => {
    await t.close();
  });

  it("never carry a password, token, code, secret or session id, at any level", async () => {
    const password = "pw-Zebra-7781-secret";
    await t.server.services.auth.createUser("logme", { password });
    const client = new PageClient(t.server.api);
    expect((await client.login("logme", "wrong-Password-1234")).statusCode).toBe(401);
    expect((await client.login("logme", password)).statusCode).toBe(303);
    const enabled = await client.submit(await client.get("/settings"), "/settings/token", {}, { action: "enable" });
    const token = /<code id="user-access-token">([^<]+)</.exec(enabled.body)?.[1] ?? "";
    const reg = await client.submit(await client.get("/settings"), "/settings/apps", { name: "L", redirect_uri: "https://l.example/cb" });
    const clientId = /<code id="client-id">([^<]+)</.exec(reg.body)?.[1] ?? "";
    const secret = /<code id="client-secret">([^<]+)</.exec(reg.body)?.[1] ?? "";
    const to = await authorize(client, { client_id: clientId, redirect_uri: "https://l.example/cb", scope: "all", response_type: "code" });
    const code = to.searchParams.get("code") ?? "";
    const grant = { client_id: clientId, client_secret: secret, code, grant_type: "authorization_code" };
    const access = (await exchange(t.server.api, grant)).json() as { access_token: string };
    expect((await exchange(t.server.api, grant)).statusCode).toBe(400);
    await t.server.api.inject({ method: "GET", url: rest(`/devices?access_token=${access.access_token}`) });
    await t.server.api.inject({ method: "GET", url: rest(`/devices?user_access_token=${token}x`) });
    const session = client.cookies.get("bk_session") ?? "";
    const secrets = { password, token, secret, code, access: access.access_token, session: session.slice(0, session.indexOf(".")) };
    for (const v of Object.values(secrets)) expect(v.length).toBeGreaterThan(10);
    const text = lines.join("");
    expect(text).toContain('"msg":"login failed"');
    expect(text).toContain('"msg":"oauth code issued"');
    for (const [name, v] of Object.entries(secrets)) expect(text.includes(v), `${name} appears in the logs`).toBe(false);
  });
});
