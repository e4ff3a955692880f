/**
 * Property: random methods × the route table, random bodies (JSON values, strings), content types,
 * credentials and query parameters never produce a 5xx, and every JSON answer is a well-formed
 * envelope (or one of the spec's two bare shapes: the activation `{token}`, the commands `{DEVICE}`).
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asBlock } from "../helpers/core.js";
import { type TestServer, startTestServer } from "../helpers/server.js";

const NODE = "FUZZNODE00001";
const GUIDS = [`${NODE}_0_0_9`, `${NODE}_0_0_1002`];
/** The route table: [method, path] of every core route. */
const ROUTES: [string, string][] = [
  ["GET", "/devices"],
  ["GET", "/device/:guid"],
  ["PUT", "/device/:guid"],
  ["DELETE", "/device/:guid"],
  ["GET", "/device/:guid/heartbeat"],
  ["GET", "/device/:guid/data"],
  ["POST", "/device/:guid/callback"],
  ["GET", "/device/:guid/callback"],
  ["PUT", "/device/:guid/callback"],
  ["DELETE", "/device/:guid/callback"],
  ["GET", "/block"],
  ["POST", "/block"],
  ["GET", "/block/:nodeId"],
  ["DELETE", "/block/:nodeId"],
  ["GET", "/block/:nodeId/activate"],
  ["POST", "/block/:nodeId/heartbeat"],
  ["POST", "/block/:nodeId/data"],
  ["POST", "/block/:nodeId/config"],
  ["GET", "/block/:nodeId/commands"],
];
const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"] as const;

function checkAnswer(status: number, contentType: string | undefined, text: string, method: string): void {
  expect(status, text).toBeLessThan(500);
  expect(status).toBeGreaterThanOrEqual(200);
  if (method === "HEAD" || status === 204) return;
  expect(contentType ?? "").toMatch(/^application\/json/);
  const body = JSON.parse(text) as Record<string, unknown>;
  if (status === 200 && Object.keys(body).length === 1 && typeof body.token === "string") return;
  if (status === 200 && Object.keys(body).length === 1 && Array.isArray(body.DEVICE)) return;
  expect(body.id).toBe(0);
  if (status >= 400) {
    expect(body.result).toBe(0);
    expect(typeof body.error).toBe("string");
    expect((body.error as string).length).toBeGreaterThan(0);
  } else {
    expect(body.result).toBe(1);
    expect(body.error).toBeNull();
  }
  for (const k of Object.keys(body)) expect(["result", "error", "id", "data"]).toContain(k);
}

describe("random requests against every route", () => {
  let t: TestServer;
  let bt: string;

  beforeAll(async () => {
    t = await startTestServer({ pollHoldSeconds: 0.02, rateLimitPerSecond: 0 });
    bt = await t.activate(NODE);
    await asBlock(t, NODE, bt, "heartbeat", [
      { G: "0", V: 0, D: 9, DA: "20" },
      { G: "0", V: 0, D: 1002, DA: "0" },
    ]);
  });
  afterAll(async () => {
    await t.close();
  });

  const text = fc.string({ maxLength: 40, unit: "grapheme" });
  const segment = fc.oneof({ arbitrary: fc.constantFrom(NODE, ...GUIDS, "ABCDEF123456", "x"), weight: 4 }, { arbitrary: text.map(encodeURIComponent), weight: 1 });
  const block = fc.record({ G: fc.oneof(fc.constant("0"), fc.jsonValue()), V: fc.oneof(fc.constant(0), fc.jsonValue()), D: fc.oneof(fc.constantFrom(9, 1002), fc.jsonValue()), DA: fc.oneof(fc.string(), fc.double(), fc.jsonValue()) }, { requiredKeys: [] });
  const body = fc.oneof(
    fc.constant(undefined),
    fc.jsonValue().map((v) => JSON.stringify(v)),
    block.map((v) => JSON.stringify(v)),
    fc.array(block, { maxLength: 3 }).map((v) => JSON.stringify(v)),
    fc.record({ DA: fc.jsonValue(), shortName: fc.jsonValue(), nodeid: fc.oneof(fc.constant(NODE), fc.jsonValue()), url: fc.oneof(fc.webUrl(), fc.jsonValue()) }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
    fc.string({ maxLength: 200 }),
  );
  const contentType = fc.oneof(
    { arbitrary: fc.constant("application/json"), weight: 8 },
    fc.constantFrom("application/json", "application/json; charset=utf-8", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data", undefined),
    fc.string({ maxLength: 30 }).filter((s) => /^[\x21-\x7e]*$/.test(s)),
  );
  const query = fc.record(
    {
      user_access_token: fc.oneof({ arbitrary: fc.constant("@user"), weight: 6 }, { arbitrary: text, weight: 1 }, { arbitrary: fc.constant("@none"), weight: 1 }),
      access_token: text,
      from: fc.oneof(fc.integer().map(String), text),
      to: fc.oneof(fc.double().map(String), text),
      interval: fc.oneof(fc.constantFrom("1day", "3month", "2year", "1week"), text),
      fn: fc.oneof(fc.constantFrom("mean", "stddev", "count", "median"), text),
    },
    { requiredKeys: ["user_access_token"] },
  );
  const request = fc.record({
    // Mostly the methods a route has, sometimes any method on any route.
    route: fc.oneof(
      { arbitrary: fc.constantFrom(...ROUTES), weight: 4 },
      { arbitrary: fc.tuple(fc.constantFrom(...METHODS), fc.constantFrom(...ROUTES.map((r) => r[1]))), weight: 1 },
    ),
    guid: segment,
    nodeId: segment,
    query,
    body,
    contentType,
    extraHeaders: fc.dictionary(
      fc.constantFrom("accept", "content-encoding", "transfer-encoding-x", "x-forwarded-for", "accept-version", "expect", "x-request-id", "origin"),
      fc.string({ maxLength: 20 }).filter((v) => /^[\x20-\x7e]*$/.test(v)),
      { maxKeys: 3 },
    ),
    blockToken: fc.oneof({ arbitrary: fc.constant("@block"), weight: 4 }, fc.constant(undefined), text.filter((s) => /^[\x20-\x7e]*$/.test(s))),
  });

  it("never answers 5xx, and every JSON answer is a well-formed envelope", async () => {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const [method, route] = r.route as [(typeof METHODS)[number], string];
        const path = route.replace(":guid", r.guid).replace(":nodeId", r.nodeId);
        const q = new URLSearchParams();
        for (const [k, v] of Object.entries(r.query)) if (v !== "@none") q.set(k, v === "@user" ? t.token : v);
        const headers: Record<string, string> = { ...r.extraHeaders };
        if (r.contentType !== undefined) headers["content-type"] = r.contentType;
        if (r.blockToken !== undefined) headers["x-service-token"] = r.blockToken === "@block" ? bt : r.blockToken;
        const res = await t.api({ method, url: `${path}?${q.toString()}`, headers, ...(r.body === undefined ? {} : { payload: r.body }) });
        checkAnswer(res.statusCode, res.headers["content-type"] as string | undefined, res.body, method);
      }),
      { numRuns: 250 },
    );
    // Still serving.
    expect((await t.api({ method: "GET", url: `/devices?user_access_token=${t.token}` })).statusCode).toBe(200);
  });
});
