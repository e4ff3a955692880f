/**
 * The token read cache belongs to the auth service and is invalidated over the Bus: two services on
 * one store and one Bus (two instances) both drop a token the other revoked, at once.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalBus } from "../../server/bus/local.js";
import { AuthService, TOKENS_CHANNEL } from "../../server/services/auth.js";
import type { Store } from "../../server/store/types.js";
import { STORES } from "../helpers/stores.js";

const NODE = "AUTHCACHE0001";

describe("the auth service's token cache", () => {
  let store: Store;
  let dispose: () => Promise<void>;
  let bus: LocalBus;
  let a: AuthService;
  let b: AuthService;
  beforeEach(async () => {
    ({ store, dispose } = await (STORES[0] as (typeof STORES)[number]).open());
    bus = new LocalBus();
    a = new AuthService(store, Date.now, bus);
    b = new AuthService(store, Date.now, bus);
    a.start();
    b.start();
  });
  afterEach(async () => {
    a.stop();
    b.stop();
    await bus.close();
    await dispose();
  });

  it("answers a cached block token synchronously, and forgets it on every instance when one revokes it", async () => {
    const { user } = await a.createUser("u");
    const token = await a.issue(user.id, "block", { nodeId: NODE });
    expect(b.cachedBlock(token, NODE)).toBeUndefined(); // not read yet
    await b.block(token, NODE);
    await a.block(token, NODE);
    expect(b.cachedBlock(token, NODE)).toMatchObject({ userId: user.id, nodeId: NODE });
    const heard: string[] = [];
    bus.subscribe(TOKENS_CHANNEL, (m) => heard.push(m));
    const replacement = await a.issue(user.id, "block", { nodeId: NODE }); // replaces the old one
    expect(heard).toHaveLength(1);
    expect(b.cachedBlock(token, NODE)).toBeUndefined();
    expect(a.cachedBlock(token, NODE)).toBeUndefined();
    await expect(b.block(token, NODE)).rejects.toMatchObject({ statusCode: 401 });
    await b.block(replacement, NODE);
    expect(b.cachedBlock(replacement, NODE)).toBeDefined();
    expect(await a.revoke({ node_id: NODE, kind: "block" })).toBe(1);
    expect(b.cachedBlock(replacement, NODE)).toBeUndefined();
  });

  it("a read that began before a revocation does not put the revoked row back into the cache", async () => {
    const { user, token } = await a.createUser("u");
    const reading = b.user({ user_access_token: token }); // reads the store, not finished yet
    await a.revoke({ user_id: user.id, kind: "user" });
    await reading.catch(() => undefined);
    await expect(b.user({ user_access_token: token })).rejects.toMatchObject({ statusCode: 401 });
  });
});
