import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Accounts } from "../../../server/services/accounts/index.js";
import { SESSION_TTL_MS } from "../../../server/services/accounts/sessions.js";
import { AuthService } from "../../../server/services/auth.js";
import { hashToken } from "../../../server/services/secrets.js";
import { openSqliteStore } from "../../../server/store/sqlite/index.js";

describe("Accounts lifecycle", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("keeps its session key across restarts and sweeps expired sessions and codes every 10 minutes", async () => {
    vi.useFakeTimers();
    let now = Date.UTC(2026, 0, 1);
    const clock = () => now;
    const store = openSqliteStore({ dataDir: ":memory:" });
    const auth = new AuthService(store, clock);
    const accounts = new Accounts(store, auth, pino({ level: "silent" }), clock);
    await accounts.start();
    const again = new Accounts(store, auth, pino({ level: "silent" }), clock);
    await again.start();
    expect(again.key.equals(accounts.key)).toBe(true);
    again.stop();

    const { user } = await auth.createUser("sweepy");
    const cookie = await accounts.sessions.create(user.id);
    const app = await accounts.oauth.createApp(user.id, "S", "https://s.example/cb");
    const req = await accounts.oauth.checkAuthorize({ client_id: app.client_id, redirect_uri: "https://s.example/cb", scope: "all", response_type: "code" });
    if ("error" in req) throw new Error(req.description);
    const code = await accounts.oauth.issueCode(user.id, req);
    const sessionHash = hashToken(cookie.slice(0, cookie.lastIndexOf(".")));
    expect(await store.sessions.find(sessionHash)).not.toBeNull();

    now += SESSION_TTL_MS + 1;
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(await store.sessions.find(sessionHash)).toBeNull();
    expect(await store.oauthCodes.consume(hashToken(code))).toBeNull();

    accounts.stop();
    expect(vi.getTimerCount()).toBe(0);
    await store.close();
  });
});
