/** /device/:guid/callback: one URL per device (registration only; delivery is the dispatcher's). */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OK, asBlock, asUser, expectRefused, freshNode } from "../helpers/core.js";
import { type TestServer, startTestServer } from "../helpers/server.js";

describe("device callbacks", () => {
  let t: TestServer;
  let guid: string;
  beforeAll(async () => {
    t = await startTestServer();
    const node = freshNode("CALLBACK");
    const bt = await t.activate(node);
    await asBlock(t, node, bt, "data", { G: "0", V: 0, D: 9, DA: "1" });
    guid = `${node}_0_0_9`;
  });
  afterAll(async () => {
    await t.close();
  });

  type Cb = { data: { url: string; secret: string } };

  it("POST registers, GET shows {url, secret}, POST again is 409, PUT replaces and keeps the secret", async () => {
    expect((await asUser(t, "POST", `/device/${guid}/callback`, { url: "http://127.0.0.1:9/a" })).body).toEqual(OK);
    const first = await asUser<Cb>(t, "GET", `/device/${guid}/callback`);
    expect(first.body.data.url).toBe("http://127.0.0.1:9/a");
    expect(first.body.data.secret.length).toBeGreaterThanOrEqual(32);
    expectRefused(await asUser(t, "POST", `/device/${guid}/callback`, { url: "http://127.0.0.1:9/b" }), 409, /already has a callback/, /PUT/);
    expect((await asUser(t, "PUT", `/device/${guid}/callback`, { url: "https://example.com/b" })).body).toEqual(OK);
    const second = await asUser<Cb>(t, "GET", `/device/${guid}/callback`);
    expect(second.body.data).toEqual({ url: "https://example.com/b", secret: first.body.data.secret });
  });

  it("DELETE removes it; a second DELETE and a GET are 404; PUT creates one", async () => {
    await asUser(t, "PUT", `/device/${guid}/callback`, { url: "http://127.0.0.1:9/c" });
    expect((await asUser(t, "DELETE", `/device/${guid}/callback`)).body).toEqual(OK);
    expectRefused(await asUser(t, "DELETE", `/device/${guid}/callback`), 404, /no callback/);
    expectRefused(await asUser(t, "GET", `/device/${guid}/callback`), 404, /no callback/);
    expect((await asUser(t, "PUT", `/device/${guid}/callback`, { url: "http://127.0.0.1:9/d" })).body).toEqual(OK);
    expect((await asUser<Cb>(t, "GET", `/device/${guid}/callback`)).body.data.url).toBe("http://127.0.0.1:9/d");
  });

  it("refuses a URL that is not http(s), naming url", async () => {
    expectRefused(await asUser(t, "PUT", `/device/${guid}/callback`, { url: "ftp://x/y" }), 400, /url/);
    expectRefused(await asUser(t, "PUT", `/device/${guid}/callback`, { url: "" }), 400, /url/);
  });

  it("a deleted device takes its callback with it", async () => {
    const node = freshNode("CALLBACK");
    const bt = await t.activate(node);
    await asBlock(t, node, bt, "data", { G: "0", V: 0, D: 9, DA: "1" });
    const g = `${node}_0_0_9`;
    await asUser(t, "POST", `/device/${g}/callback`, { url: "http://127.0.0.1:9/e" });
    await asUser(t, "DELETE", `/device/${g}`);
    await asBlock(t, node, bt, "data", { G: "0", V: 0, D: 9, DA: "2" });
    expectRefused(await asUser(t, "GET", `/device/${g}/callback`), 404, /no callback/);
  });
});
