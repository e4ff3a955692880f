/**
 * A tiny third-party application for the browser test (node:http on port 0): `/start` sends the
 * browser to /oauth/authorize, `/cb` receives the code, exchanges it with the app's secret, and
 * calls the API with the access token.
 */
import { randomBytes } from "node:crypto";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface ClientApp {
  url: string;
  redirectUri: string;
  /** Set once the app is registered on the settings page. */
  credentials: { clientId: string; clientSecret: string } | null;
  /** What the app got: its token and the GUIDs of the devices it saw. */
  result: { accessToken: string; guids: string[] } | null;
  close(): Promise<void>;
}

const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;

export async function startClientApp(authUrl: string): Promise<ClientApp> {
  const states = new Set<string>();
  const app = { credentials: null, result: null } as ClientApp;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const u = new URL(req.url ?? "/", app.url);
      if (u.pathname === "/favicon.ico") {
        res.writeHead(204).end();
        return;
      }
      if (u.pathname === "/start" && app.credentials) {
        const state = randomBytes(8).toString("hex");
        states.add(state);
        const q = new URLSearchParams({ client_id: app.credentials.clientId, redirect_uri: app.redirectUri, scope: "all", response_type: "code", state });
        res.writeHead(302, { location: `${authUrl}/oauth/authorize?${q.toString()}` }).end();
        return;
      }
      if (u.pathname === "/cb" && app.credentials) {
        const state = u.searchParams.get("state") ?? "";
        if (!states.delete(state)) throw new Error(`unexpected state ${state}`);
        const code = u.searchParams.get("code");
        if (!code) throw new Error(`no code: ${u.searchParams.get("error") ?? "?"}`);
        const tokenRes = await fetch(`${authUrl}/oauth/access_token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            client_id: app.credentials.clientId,
            client_secret: app.credentials.clientSecret,
            code,
            grant_type: "authorization_code",
            redirect_uri: app.redirectUri,
          }),
        });
        const token = (await tokenRes.json()) as { access_token?: string };
        if (!token.access_token) throw new Error(`token exchange failed: ${tokenRes.status}`);
        const devices = await fetch(`${authUrl}/rest/v0/devices?access_token=${encodeURIComponent(token.access_token)}`);
        const body = (await devices.json()) as { data: Record<string, unknown> };
        app.result = { accessToken: token.access_token, guids: Object.keys(body.data) };
        res.writeHead(200, { "content-type": "text/html" }).end(page("Connected", `<p id="devices">${app.result.guids.length} device(s): ${app.result.guids.join(", ")}</p>`));
        return;
      }
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
    })().catch((err: unknown) => {
      res.writeHead(500, { "content-type": "text/html" }).end(page("Client error", String(err)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  app.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  app.redirectUri = `${app.url}/cb`;
  app.close = () => new Promise((resolve) => server.close(() => resolve()));
  return app;
}
