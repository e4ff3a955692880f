/** Bad input: each case is a 4xx with the envelope and an error naming what is wrong; never a 5xx. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OK, asBlock, asUser, expectRefused, withToken } from "../helpers/core.js";
import { type TestServer, startTestServer } from "../helpers/server.js";

const NODE = "BADINPUT00001";
const TEMP = `${NODE}_0_0_9`;
const good = { G: "0", V: 0, D: 9, DA: "20" };

describe("bad input", () => {
  let t: TestServer;
  let bt: string;
  let other: string;

  beforeAll(async () => {
    t = await startTestServer({ pollHoldSeconds: 0.1 });
    bt = await t.activate(NODE);
    await asBlock(t, NODE, bt, "data", good);
    other = await t.addUser("other");
  });
  afterAll(async () => {
    // The server kept serving through all of it.
    expect((await asBlock(t, NODE, bt, "data", good)).body).toEqual(OK);
    expect((await asUser(t, "GET", `/device/${TEMP}`)).status).toBe(200);
    await t.close();
  });

  /** A raw call: the body exactly as given, with the given content type. */
  const raw = async (method: "GET" | "POST" | "PUT" | "DELETE", url: string, body?: string, contentType = "application/json", headers: Record<string, string> = {}) => {
    const res = await t.api({ method, url, headers: { "content-type": contentType, "x-service-token": bt, ...headers }, ...(body === undefined ? {} : { payload: body }) });
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.body);
    } catch {
      parsed = undefined;
    }
    return { status: res.statusCode, body: parsed, text: res.body };
  };
  const data = `/block/${NODE}/data`;

  it("malformed JSON is 400", async () => {
    expectRefused(await raw("POST", data, '{"G":"0",'), 400, /malformed JSON/);
    expectRefused(await raw("PUT", withToken(`/device/${TEMP}`, t.token), "{shortName:"), 400, /malformed JSON/);
    // What is wrong, from the parser: where it stopped, or the key refused.
    expectRefused(await raw("POST", data, '{"G":"0",'), 400, /malformed JSON body: .*JSON/, /(end of JSON input|position)/);
    expectRefused(await raw("PUT", withToken(`/device/${TEMP}`, t.token), '{"shortName":"x","__proto__":{"a":1}}'), 400, /malformed JSON body: .*"__proto__"/);
  });

  it("a JSON body that is not an object is 400", async () => {
    for (const body of ["[1,2]", "null", '"text"', "42"]) expectRefused(await raw("POST", data, body), 400, /body must be object/);
  });

  it("wrong types are 400 naming the field and the type wanted", async () => {
    expectRefused(await asBlock(t, NODE, bt, "data", { ...good, V: "x" }), 400, /body\/V must be a non-negative integer/);
    expectRefused(await asBlock(t, NODE, bt, "data", { ...good, G: { a: 1 } }), 400, /body\/G must be string or integer/);
    expectRefused(await asBlock(t, NODE, bt, "data", { ...good, DA: [1, 2] }), 400, /body\/DA must be string or number/);
    expectRefused(await asBlock(t, NODE, bt, "data", { ...good, D: 1.5 }), 400, /body\/D must be a non-negative integer/);
    expectRefused(await asUser(t, "PUT", `/device/${TEMP}`, { shortName: { x: 1 } }), 400, /body\/shortName must be string/);
    expectRefused(await asUser(t, "POST", "/block", { nodeid: ["ABCDEF123456", "x"] }), 400, /nodeid/);
  });

  it("missing required fields are 400 naming the field", async () => {
    expectRefused(await asBlock(t, NODE, bt, "data", { G: "0", V: 0, D: 9 }), 400, /required property 'DA'/);
    expectRefused(await asBlock(t, NODE, bt, "data", { V: 0, D: 9, DA: "1" }), 400, /required property 'G'/);
    expectRefused(await asBlock(t, NODE, bt, "heartbeat", [good, { G: "0", D: 9, DA: "1" }]), 400, /body\/1 must have required property 'V'/);
    expectRefused(await asBlock(t, NODE, bt, "config", { G: "0", V: 0, D: 9 }), 400, /required property 'type'/);
    expectRefused(await asUser(t, "POST", "/block", {}), 400, /required property 'nodeid'/);
    expectRefused(await asUser(t, "POST", `/device/${TEMP}/callback`, {}), 400, /required property 'url'/);
  });

  it("node ids shorter than 12, longer than 64 or not alphanumeric are 400", async () => {
    for (const node of ["SHORT", "ABCDEFGHIJK", "ABCDEF-12345678", "ABCDEF_123456", "ABCDEF%20123456", "A".repeat(65)]) {
      const res = await asBlock(t, node, bt, "data", good);
      expectRefused(res, 400, /node id/, /is not 12 to 64 alphanumeric characters/);
      expectRefused(await t.api({ method: "GET", url: `/block/${node}/activate` }).then((r) => ({ status: r.statusCode, body: r.json() as unknown, text: r.body })), 400, /nodeId/);
    }
    expectRefused(await asUser(t, "POST", "/block", { nodeid: "SHORT123" }), 400, /nodeid/);
    expectRefused(await asUser(t, "POST", "/block", { nodeid: "ABCDEF-123456" }), 400, /nodeid/);
  });

  it("unknown interval units and fn values are 400 naming the parameter", async () => {
    const q = (query: string) => asUser(t, "GET", `/device/${TEMP}/data?${query}`);
    for (const interval of ["1week", "5sec", "hour", "1.5day", "-1day", "0min"]) expectRefused(await q(`interval=${interval}`), 400, /interval/);
    expectRefused(await q("interval=1day&fn=median"), 400, /querystring\/fn must be one of mean, sum, min, max, stddev, ss, count/);
    expectRefused(await q("fn=MEAN"), 400, /fn/);
  });

  it("negative or absurd timestamps are 400", async () => {
    expectRefused(await asBlock(t, NODE, bt, "data", { ...good, TIMESTAMP: -1 }), 400, /TIMESTAMP/);
    expectRefused(await asBlock(t, NODE, bt, "data", { ...good, TIMESTAMP: 1e20 }), 400, /TIMESTAMP/);
    expectRefused(await asBlock(t, NODE, bt, "data", { ...good, TIMESTAMP: 86_400_000 }), 400, /TIMESTAMP/); // 1970
    expectRefused(await asBlock(t, NODE, bt, "data", { ...good, TIMESTAMP: "yesterday" }), 400, /TIMESTAMP/);
    const q = (query: string) => asUser(t, "GET", `/device/${TEMP}/data?${query}`);
    expectRefused(await q("from=-5"), 400, /from/);
    expectRefused(await q("to=1e20"), 400, /to/);
    expectRefused(await q("from=abc"), 400, /from must be number/);
    expectRefused(await q("from=2000&to=1000"), 400, /from \(2000\) is after to \(1000\)/);
  });

  it("a heartbeat of more than 1000 readings is 400; an empty one too", async () => {
    const many = Array.from({ length: 1001 }, () => ({ G: "0", V: 0, D: 9, DA: "1" }));
    expectRefused(await asBlock(t, NODE, bt, "heartbeat", many), 400, /body must NOT have more than 1000 items/);
    expectRefused(await asBlock(t, NODE, bt, "heartbeat", []), 400, /body must NOT have fewer than 1 items/);
  });

  it("bodies over 64 KiB are 413", async () => {
    expectRefused(await asBlock(t, NODE, bt, "data", { ...good, DA: "x".repeat(70_000) }), 413, /64 KiB/);
    const many = Array.from({ length: 1000 }, (_, i) => ({ ...good, DA: String(i), name: "n".repeat(60) }));
    expectRefused(await asBlock(t, NODE, bt, "heartbeat", many), 413, /too large/);
    expectRefused(await asUser(t, "PUT", `/device/${TEMP}`, { shortName: "s".repeat(70_000) }), 413, /too large/);
  });

  it("bodies that are not JSON are 415", async () => {
    expectRefused(await raw("POST", data, "<xml/>", "application/xml"), 415, /Content-Type/);
    expectRefused(await raw("PUT", withToken(`/device/${TEMP}`, t.token), "x", "application/octet-stream"), 415, /Content-Type/);
  });

  it("unknown and malformed GUIDs are 404 naming the GUID; an overlong one is 414", async () => {
    expectRefused(await asUser(t, "GET", `/device/${NODE}_0_0_999`), 404, `unknown device ${NODE}_0_0_999`);
    expectRefused(await asUser(t, "GET", "/device/not-a-guid"), 404, "unknown device not-a-guid");
    expectRefused(await asUser(t, "PUT", "/device/NOPE00000000_0_0_1002", { DA: "1" }), 404, "NOPE00000000_0_0_1002");
    expectRefused(await asUser(t, "GET", `/device/${"x".repeat(300)}`), 414, /longer than 256/);
  });

  it("a path that is not a valid URL is 400 with the envelope", async () => {
    const res = await t.api({ method: "GET", url: withToken("/device/%E0%A4%A", t.token) });
    expectRefused({ status: res.statusCode, body: res.json() as unknown, text: res.body }, 400, /not a valid URL/);
  });

  it("another user's GUID is 404, and a block token on another node's path is 403", async () => {
    expectRefused(await asUser(t, "GET", `/device/${TEMP}`, undefined, other), 404, `unknown device ${TEMP}`);
    const otherBt = await t.activate("BADINPUT00002", other);
    expectRefused(await asBlock(t, NODE, otherBt, "data", good), 403, NODE);
  });

  it("unknown routes and methods are 404 with the envelope", async () => {
    expectRefused(await raw("GET", "/nothing/here"), 404, /no route GET \/rest\/v0\/nothing\/here/);
    expectRefused(await raw("PATCH" as "GET", withToken(`/device/${TEMP}`, t.token)), 404, /no route PATCH/);
  });
});
