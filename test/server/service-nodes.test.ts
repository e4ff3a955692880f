/**
 * An account's service node (`SVC` and its user id on 9 digits, home of its Webhooks, SMS, File Host
 * and Email devices) is no block: no flow activates it, claims it or sends events for it, neither
 * for its owner nor, before the owner has made it, for another account. Real HTTP on loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OK, expectRefused } from "../helpers/core.js";
import { http } from "../helpers/http.js";
import { type TestServer, startTestServer } from "../helpers/server.js";
import { serviceNodeId } from "../../server/services/service-devices.js";

describe("service nodes", () => {
  let t: TestServer;
  let base: string;
  let auth: string;
  let bob: string;
  let bobVirtual: string;
  let carol: string;
  let carolNode: string;
  let bobNode: string;
  const as = (token: string, method: string, path: string, json?: unknown) =>
    http(`${base}${path}${path.includes("?") ? "&" : "?"}user_access_token=${token}`, { method, json });
  const event = (token: string, node: string, json: unknown) =>
    http(`${base}/block/${node}/data`, { method: "POST", json, headers: { "x-service-token": token } });

  beforeAll(async () => {
    t = await startTestServer({ pollHoldSeconds: 0.05 }, { listen: true });
    base = t.baseUrl as string;
    auth = base.replace(/\/rest\/v0$/, "");
    const auths = t.server.services.auth;
    const b = await auths.createUser("bob");
    bob = b.token;
    bobNode = serviceNodeId(b.user.id);
    bobVirtual = await auths.issue(b.user.id, "vblock");
    const c = await auths.createUser("carol");
    carol = c.token;
    carolNode = serviceNodeId(c.user.id);
  });
  afterAll(async () => {
    await t?.close();
  });

  it("another account's service node, not made yet, cannot be taken by any flow", async () => {
    expectRefused(await as(bob, "GET", `/block/${carolNode}/activate`), 403, carolNode, /service node/);
    expectRefused(await http(`${base}/block/${carolNode}/activate`), 403, carolNode, /service node/);
    expectRefused(await as(bob, "POST", "/block", { nodeid: carolNode }), 403, carolNode, /service node/);
    expectRefused(await event(bobVirtual, carolNode, { G: "0", V: 0, D: 108, DA: "forged" }), 403, carolNode, /service node/);
    expect(Object.keys(((await as(bob, "GET", "/block")).body as { data: object }).data)).toEqual([]);
    // Carol's Webhooks device, made afterwards, is hers alone and has had no reading.
    expect((await http(`${auth}/auth/webhook?user_access_token=${carol}`)).body).toMatchObject({ result: 1 });
    const guid = `${carolNode}_0_0_108`;
    expect((await as(carol, "GET", `/device/${guid}/heartbeat`)).body).toMatchObject({ data: { DA: null, timestamp: null } });
    expectRefused(await as(bob, "GET", `/device/${guid}`), 404);
  });

  it("its owner cannot activate it or send its events either: it has no block token", async () => {
    expect((await http(`${auth}/auth/webhook?user_access_token=${bob}`)).body).toMatchObject({ result: 1 });
    expectRefused(await as(bob, "GET", `/block/${bobNode}/activate`), 403, bobNode, /service node/);
    expectRefused(await event(bobVirtual, bobNode, { G: "0", V: 0, D: 108, DA: "x" }), 403, bobNode, /service node/);
    // The virtual block token still works on an ordinary node.
    expect((await event(bobVirtual, "BOBVIRTUAL0001", { G: "0", V: 0, D: 9, DA: "20" })).body).toEqual(OK);
  });
});
