/** The login attempts' limit over real HTTP on loopback: its 429 tells when to ask again. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, startTestServer } from "../../helpers/server.js";
import { findForm } from "../accounts/page-client.js";

let t: TestServer;
let now = Date.UTC(2026, 0, 1);
let origin: string;

beforeAll(async () => {
  t = await startTestServer({ clock: () => now }, { listen: true });
  origin = new URL(t.baseUrl as string).origin;
});

afterAll(async () => {
  await t.close();
});

/** Fetches the login form (its CSRF field and pre-session cookie) and posts it with `username` and `password`. */
async function login(username: string, password: string): Promise<Response> {
  const page = await fetch(`${origin}/auth/login`);
  const cookie = page.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
  const { fields } = findForm(await page.text(), "/auth/login");
  return fetch(`${origin}/auth/login`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...fields, username, password }).toString(),
  });
}

describe("login attempts limit", () => {
  it("answers 429 with Retry-After the time left until the bucket holds an attempt again", async () => {
    // (address, user name): 10 at once, one more every 30 s.
    for (let i = 0; i < 10; i++) expect((await login("carol", `wrong-${i}`)).status).toBe(401);
    const limited = await login("carol", "wrong");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("30");
    expect(await limited.text()).toContain("Too many login attempts. Wait 30 seconds");
    now += 12_000;
    const later = await login("carol", "wrong");
    expect(later.headers.get("retry-after")).toBe("18");
    // The address: 30 at once, one more every 10 s. 12 taken above (the refusals by the user's bucket
    // too), 1.2 given back by the 12 s: 19 more, then 0.2 left, a whole attempt in 8 s.
    for (let i = 0; i < 19; i++) expect((await login(`dave${i}`, "x")).status).toBe(401);
    const address = await login("erin", "x");
    expect(address.status).toBe(429);
    expect(address.headers.get("retry-after")).toBe("8");
  });
});
