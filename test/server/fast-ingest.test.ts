/**
 * The fast lane for block events (server/http/fast-ingest.ts) answers exactly as the fastify routes
 * do: the same bodies over real HTTP (through the lane) and through inject() (fastify's path only)
 * give the same status and body, and what the lane acknowledged is stored.
 */
import { request } from "node:http";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FastIngest } from "../../server/http/fast-ingest.js";
import { type TestServer, startTestServer } from "../helpers/server.js";

const NODE = "FASTLANE00001";
const OTHER = "FASTLANE00002";

interface Answer {
  status: number;
  type: string | undefined;
  body: string;
}

describe("block events on the fast lane", () => {
  let t: TestServer;
  let port: number;
  let bt: string;
  let otherToken: string;
  let lane: FastIngest;

  beforeAll(async () => {
    t = await startTestServer({ host: "127.0.0.1", port: 0, streamPort: 0 }, { listen: true });
    port = Number(new URL(t.baseUrl as string).port);
    bt = await t.activate(NODE);
    otherToken = await t.activate(OTHER);
    lane = t.server.api.fastIngest as FastIngest;
  });
  afterAll(async () => {
    await t.close();
  });

  /** One POST over a real socket, the body byte for byte as given. */
  const overHttp = (path: string, body: string, headers: Record<string, string> = {}): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          host: "127.0.0.1",
          port,
          method: "POST",
          path: `/rest/v0${path}`,
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), "x-service-token": bt, ...headers },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, type: res.headers["content-type"], body: text }));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  const viaFastify = async (path: string, body: string, headers: Record<string, string> = {}): Promise<Answer> => {
    const res = await t.api({
      method: "POST",
      url: path,
      headers: { "content-type": "application/json", "x-service-token": bt, ...headers },
      payload: body,
    });
    return { status: res.statusCode, type: res.headers["content-type"] as string | undefined, body: res.body };
  };
  const history = async (guid: string): Promise<unknown[]> => {
    const res = await t.api({ method: "GET", url: `/device/${guid}/data?user_access_token=${t.token}` });
    expect(res.statusCode).toBe(200);
    return (res.json() as { data: unknown[] }).data;
  };

  it("takes plainly valid data, heartbeat and config events once the token is cached, and stores them", async () => {
    // A fresh token is not in the store's cache: fastify's path answers and caches it.
    const passed = lane.stats.passed;
    const first = await overHttp(`/block/${NODE}/data`, JSON.stringify({ G: "0", V: 0, D: 9, DA: "21" }));
    expect(first.status).toBe(200);
    expect(lane.stats.passed - passed).toBe(1);
    const before = lane.stats.taken;
    const data = await overHttp(`/block/${NODE}/data`, JSON.stringify({ G: "0", V: 0, D: 9, DA: "21.5" }));
    expect(data).toEqual({ status: 200, type: "application/json; charset=utf-8", body: '{"result":1,"error":null,"id":0}' });
    const beat = await overHttp(`/block/${NODE}/heartbeat`, JSON.stringify([{ G: "0", V: 0, D: 9, DA: "22" }, { G: "1", V: 0, D: 1002, DA: "1" }]));
    expect(beat.status).toBe(200);
    const config = await overHttp(`/block/${NODE}/config`, JSON.stringify({ G: "0", V: 0, D: 9, type: "PLUGIN" }));
    expect(config.status).toBe(200);
    expect(lane.stats.taken - before).toBe(3);
    expect((await history(`${NODE}_0_0_9`)).map((p) => (p as { v: unknown }).v)).toEqual([21, 21.5, 22]);
    expect(await history(`${NODE}_1_0_1002`)).toHaveLength(1);
    const device = await t.api({ method: "GET", url: `/device/${NODE}_0_0_9?user_access_token=${t.token}` });
    expect(JSON.stringify(device.json())).toContain("plugged");
  });

  const corpus: [string, string][] = [
    ["a plain reading", '{"G":"0","V":0,"D":9,"DA":"20"}'],
    ["a numeric DA and port", '{"G":3,"V":0,"D":9,"DA":20.25}'],
    ["a buffered reading with TIMESTAMP and KEY", `{"G":"0","V":0,"D":9,"DA":"1","TIMESTAMP":${Date.now() - 1000},"KEY":"k-1"}`],
    ["malformed JSON", '{"G":"0",'],
    ["a JSON string", '"hello"'],
    ["null", "null"],
    ["an array on the data route", '[{"G":"0","V":0,"D":9,"DA":"1"}]'],
    ["a missing DA", '{"G":"0","V":0,"D":9}'],
    ["V as a numeric string (coerced by the route)", '{"G":"0","V":"0","D":9,"DA":"1"}'],
    ["D as a boolean", '{"G":"0","V":0,"D":true,"DA":"1"}'],
    ["a negative device type", '{"G":"0","V":0,"D":-1,"DA":"1"}'],
    ["a port with a slash", '{"G":"a/b","V":0,"D":9,"DA":"1"}'],
    ["an absurd TIMESTAMP", '{"G":"0","V":0,"D":9,"DA":"1","TIMESTAMP":12}'],
    ["a fractional TIMESTAMP", `{"G":"0","V":0,"D":9,"DA":"1","TIMESTAMP":${Date.now()}.5}`],
    ["an empty KEY", '{"G":"0","V":0,"D":9,"DA":"1","KEY":""}'],
    ["prototype poisoning", '{"G":"0","V":0,"D":9,"DA":"1","__proto__":{"x":1}}'],
    ["a constructor key", '{"G":"0","V":0,"D":9,"DA":"1","constructor":{"prototype":{"x":1}}}'],
    ["a DA over 4096 characters", JSON.stringify({ G: "0", V: 0, D: 9, DA: "x".repeat(4097) })],
    ["a DA of 4096 astral characters", JSON.stringify({ G: "0", V: 0, D: 9, DA: "😀".repeat(4096) })],
    ["unknown extra fields", '{"G":"0","V":0,"D":9,"DA":"1","extra":[1,2]}'],
  ];

  it.each(corpus)("answers %s as fastify does", async (_name, body) => {
    const fast = await overHttp(`/block/${NODE}/data`, body);
    const slow = await viaFastify(`/block/${NODE}/data`, body);
    expect(fast).toEqual(slow);
    expect(fast.status).toBeLessThan(500);
  });

  it("answers bad heartbeats and config events as fastify does", async () => {
    const cases: [string, string][] = [
      ["heartbeat", "[]"],
      ["heartbeat", '{"G":"0","V":0,"D":9,"DA":"1"}'],
      ["heartbeat", `[${Array.from({ length: 1001 }, () => '{"G":"0","V":0,"D":9,"DA":"1"}').join(",")}]`],
      ["heartbeat", '[{"G":"0","V":0,"D":9,"DA":"1"},{"G":"0"}]'],
      ["config", '{"G":"0","V":0,"D":9}'],
      ["config", '{"G":"0","V":0,"D":9,"type":""}'],
    ];
    for (const [route, body] of cases) {
      const fast = await overHttp(`/block/${NODE}/${route}`, body);
      expect(fast, `${route} ${body.slice(0, 60)}`).toEqual(await viaFastify(`/block/${NODE}/${route}`, body));
      expect(fast.status).toBe(400);
    }
  });

  it("leaves other tokens, nodes and content types to fastify with the same answers", async () => {
    const body = '{"G":"0","V":0,"D":9,"DA":"1"}';
    const passed = lane.stats.passed;
    const cases: [string, Record<string, string>][] = [
      [`/block/${OTHER}/data`, {}], // a token on another node's path: 403
      [`/block/${NODE}/data`, { "x-service-token": "not-a-token" }], // 401
      [`/block/${NODE}/data`, { "x-service-token": otherToken }], // 403
      [`/block/${NODE}/data`, { "content-type": "text/plain" }], // 415
      [`/block/SHORT/data`, {}], // 400: the node id
      [`/block/${NODE}/data?x=1`, {}], // a query string: fastify's path, 200
    ];
    for (const [path, headers] of cases) {
      const fast = await overHttp(path, body, headers);
      expect(fast, path).toEqual(await viaFastify(path, body, headers));
    }
    expect(lane.stats.passed - passed).toBe(cases.length);
  });

  it("answers random bodies as fastify does (property)", async () => {
    const reading = fc.record(
      {
        G: fc.oneof(fc.string({ maxLength: 6 }), fc.integer({ min: -2, max: 40 })),
        V: fc.oneof(fc.integer({ min: -1, max: 3 }), fc.constant("0"), fc.double()),
        D: fc.oneof(fc.integer({ min: -1, max: 2000 }), fc.boolean()),
        DA: fc.oneof(fc.string({ maxLength: 8 }), fc.double({ noNaN: true }), fc.constant(null)),
        TIMESTAMP: fc.oneof(fc.integer(), fc.constant(Date.now())),
        KEY: fc.string({ maxLength: 3 }),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(reading, fc.jsonValue()), async (value) => {
        const body = JSON.stringify(value) ?? "null";
        const fast = await overHttp(`/block/${NODE}/data`, body);
        const slow = await viaFastify(`/block/${NODE}/data`, body);
        expect(fast).toEqual(slow);
        expect(fast.status).toBeLessThan(500);
      }),
      { numRuns: 150 },
    );
  });
});
