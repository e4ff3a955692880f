/**
 * The shared store suite, accounts: users, tokens, blocks, browser sessions, OAuth applications and
 * codes, server keys; every implementation gives the same answers (test/helpers/store-suite.ts).
 */
import { describe, expect, it } from "vitest";
import type { TokenRow } from "../../server/store/types.js";
import { NODE, SUITE_STORES, ev, openEach, store, userId } from "../helpers/store-suite.js";

describe.each(SUITE_STORES)("store: $name", (impl) => {
  openEach(impl);

  it("users: create, look up by name and id, count, set the password", async () => {
    expect(await store.users.byName("alice")).toMatchObject({ id: userId, name: "alice", password_hash: "hash", created: 1 });
    expect(await store.users.byName("nobody")).toBeNull();
    await store.users.setPassword(userId, "h2");
    expect((await store.users.byId(userId))?.password_hash).toBe("h2");
    await expect(store.users.create("alice", null, 2)).rejects.toThrow();
    expect(await store.users.count()).toBe(1);
  });

  it("tokens: replace and revoke return the hashes they deleted", async () => {
    const row = (hash: string, extra: Partial<TokenRow> = {}): TokenRow => ({
      hash,
      kind: "user",
      user_id: userId,
      node_id: null,
      client_id: null,
      created: 5,
      ...extra,
    });
    await store.tokens.put(row("a"));
    expect(await store.tokens.find("a")).toEqual(row("a"));
    expect(await store.tokens.replace({ user_id: userId, kind: "user" }, row("b"))).toEqual(["a"]);
    expect(await store.tokens.find("a")).toBeNull();
    await store.tokens.put(row("c", { kind: "oauth", client_id: "app" }));
    await store.tokens.put(row("d", { kind: "oauth", client_id: "app" }));
    expect((await store.tokens.list({ user_id: userId, kind: "oauth" })).map((t) => t.hash).sort()).toEqual(["c", "d"]);
    expect((await store.tokens.revoke({ client_id: "app", kind: "oauth" })).sort()).toEqual(["c", "d"]);
    expect(await store.tokens.revoke({ hash: "zzz" })).toEqual([]);
  });

  it("blocks: claim, claim with a token (the old one returned), pending, remove with everything", async () => {
    const b = await store.blocks.claim(NODE, userId, 10, 99);
    expect(b).toMatchObject({ node_id: NODE, user_id: userId, short_name: NODE, date_created: 10, token_pending_until: 99 });
    expect(await store.blocks.takePending(NODE, 100)).toBeNull(); // expired
    expect(await store.blocks.takePending(NODE, 50)).toMatchObject({ node_id: NODE, user_id: userId, token_pending_until: null });
    expect(await store.blocks.takePending(NODE, 50)).toBeNull(); // taken once
    await store.blocks.setPending(NODE, 70);
    await store.blocks.setPending(NODE, null);
    expect((await store.blocks.get(NODE))?.token_pending_until).toBeNull();
    expect(await store.blocks.awaitingUntil(NODE)).toBeNull();
    await store.blocks.markAwaiting(NODE, 500);
    await store.blocks.markAwaiting(NODE, 400); // never shortened
    expect(await store.blocks.awaitingUntil(NODE)).toBe(500);
    const tok = (hash: string): TokenRow => ({ hash, kind: "block", user_id: userId, node_id: NODE, client_id: null, created: 1 });
    expect((await store.blocks.claimWithToken(NODE, userId, 20, tok("t1"))).revoked).toEqual([]);
    const second = await store.blocks.claimWithToken(NODE, userId, 30, tok("t2"));
    expect(second.revoked).toEqual(["t1"]);
    expect(second.block.node_id).toBe(NODE);
    await store.events.commit([ev("0", "1")]);
    const id = (await store.devices.byGuid(`${NODE}_0_0_9`))?.id ?? -1;
    await store.commands.add({ node_id: NODE, guid: `${NODE}_0_0_9`, g: "0", v: 0, d: 9, da: "x", created: 1, expires: 10 ** 15 });
    expect(await store.blocks.remove(NODE)).toEqual(["t2"]);
    expect(await store.blocks.get(NODE)).toBeNull();
    expect(await store.devices.byGuid(`${NODE}_0_0_9`)).toBeNull();
    expect(await store.history.count(id, 0, 10 ** 15)).toBe(0);
    expect(await store.commands.pending(NODE, 0)).toEqual([]);
  });

  it("sessions, OAuth applications and codes (used is a boolean, consumed once), server keys", async () => {
    await store.sessions.put({ hash: "s", user_id: userId, created: 1, expires: 10 });
    expect(await store.sessions.find("s")).toEqual({ hash: "s", user_id: userId, created: 1, expires: 10 });
    expect(await store.sessions.prune(11)).toBe(1);
    const app = { client_id: "c", user_id: userId, name: "App", redirect_uri: "http://x/cb", secret_hash: "h", created: 1 };
    await store.oauthApps.put(app);
    expect(await store.oauthApps.list(userId)).toEqual([app]);
    await store.oauthCodes.put({ hash: "code", client_id: "c", user_id: userId, redirect_uri: "http://x/cb", expires: 100 });
    const first = await store.oauthCodes.consume("code");
    expect(first).toMatchObject({ replayed: false, row: { used: true, token_hash: null } });
    await store.oauthCodes.setToken("code", "tok");
    expect(await store.oauthCodes.consume("code")).toMatchObject({ replayed: true, row: { used: true, token_hash: "tok" } });
    expect(await store.oauthCodes.consume("nope")).toBeNull();
    expect(await store.oauthCodes.prune(101)).toBe(1);
    expect(await store.oauthApps.remove("c")).toBe(true);
    const k1 = await store.keys.getOrCreate("session", () => "v1", 1);
    expect(await store.keys.getOrCreate("session", () => "v2", 2)).toBe(k1);
  });
});
