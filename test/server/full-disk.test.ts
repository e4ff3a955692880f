/**
 * The server with its data dir on a small tmpfs that another writer fills: every write answers 2xx
 * only for what was committed (the rid of a 200 is there after the space returns), a write the
 * store could not commit answers 503 with the envelope (never 500, never 200), /healthz says
 * degraded (503) until a write goes through again.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockkitServer } from "../../server/controller.js";
import { SmallFs } from "../helpers/small-fs.js";

const TOKEN = "admin-token-0123456789";
const NODE = "FULLDISKSRV1";
const TEMP = `${NODE}_0_0_9`;
const RELAY = `${NODE}_0_0_1002`;
const RF = `${NODE}_0_0_11`;
let fs: SmallFs;
let server: BlockkitServer;
let bt: string;

const call = async (method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: object, headers: Record<string, string> = {}) => {
  const res = await server.api.inject({ method, url: `/rest/v0${url}${url.includes("?") ? "&" : "?"}user_access_token=${TOKEN}`, headers, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() as { result: number; error: string | null; id?: number; data?: unknown } };
};
const rule = (name: string) => ({ shortName: name, preconditions: [{ handler: "serviceChange", params: { guid: TEMP, to: "1" } }], actions: [{ handler: "serviceSendCommand", params: { guid: RELAY, da: "1" } }] });

beforeAll(async () => {
  fs = SmallFs.mount(24 * 2 ** 20);
  mkdirSync(join(fs.dir, "data"));
  server = new BlockkitServer({ dataDir: join(fs.dir, "data"), logger: pino({ level: "silent" }), adminToken: TOKEN, pollHoldSeconds: 1 });
  await server.init();
  const act = await server.api.inject({ method: "GET", url: `/rest/v0/block/${NODE}/activate?user_access_token=${TOKEN}` });
  bt = (act.json() as { token: string }).token;
  for (const D of [9, 11, 1002]) {
    const r = await call("POST", `/block/${NODE}/data`, { G: "0", V: 0, D, DA: "1" }, { "x-service-token": bt });
    expect(r.status).toBe(200);
  }
});

afterAll(async () => {
  try {
    await server?.stop();
  } finally {
    fs?.unmount();
  }
});

describe("server on a full disk", () => {
  it("answers 2xx only for committed writes, 503 with the envelope for the rest, and says degraded", async () => {
    fs.fill(0);
    const writes: [string, () => ReturnType<typeof call>][] = [];
    for (let i = 0; i < 20; i++) writes.push([`POST /rule ${i}`, () => call("POST", "/rule", rule(`r${i}`))]);
    writes.push(["POST subdevice", () => call("POST", `/device/${RF}/subdevice`, { category: "rf", type: "sensor", shortName: "Door", data: "0110" })]);
    writes.push(["PUT device", () => call("PUT", `/device/${TEMP}`, { shortName: "kitchen" })]);
    writes.push(["POST callback", () => call("POST", `/device/${TEMP}/callback`, { url: "http://127.0.0.1:9/cb" })]);
    writes.push(["block data", () => call("POST", `/block/${NODE}/data`, { G: "0", V: 0, D: 9, DA: "2" }, { "x-service-token": bt })]);
    const rids: string[] = [];
    const statuses: Record<string, number> = {};
    for (const [what, w] of writes) {
      const r = await w();
      statuses[what] = r.status;
      expect([200, 503], `${what}: ${r.status} ${JSON.stringify(r.body)}`).toContain(r.status);
      if (r.status === 503) expect(r.body).toEqual({ result: 0, error: expect.stringMatching(/store cannot write now \(SQLITE_FULL: disk full\)|could not commit/), id: 0 });
      else if (what.startsWith("POST /rule")) rids.push((r.body.data as { rid: string }).rid);
    }
    expect(Object.values(statuses).filter((s) => s === 503).length, JSON.stringify(statuses)).toBeGreaterThanOrEqual(writes.length - 3);
    const health = await server.api.inject({ method: "GET", url: "/healthz" });
    expect(health.statusCode).toBe(503);
    expect(health.json()).toMatchObject({ ok: false, status: "degraded", store: { ok: false, failure: { code: "SQLITE_FULL" } } });

    fs.unfill();
    const after = await call("POST", "/rule", rule("after"));
    expect(after.status).toBe(200);
    expect((await server.api.inject({ method: "GET", url: "/healthz" })).json()).toMatchObject({ ok: true, status: "ok" });
    // Every rid answered 200 is stored.
    const list = (await call("GET", "/rule")).body.data as { rid: string }[];
    for (const rid of rids) expect(list.map((r) => r.rid)).toContain(rid);
    expect(list.length).toBe(rids.length + 1);
  });
});
