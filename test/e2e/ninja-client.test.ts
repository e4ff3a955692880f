/**
 * The original platform's npm client, `ninja-blocks` 0.1.3 with its own `request` 2.11.1, run
 * unchanged against this server over real HTTP on loopback: only its hard-coded base URL is
 * replaced, in memory.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { compileFunction } from "node:vm";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockkitServer } from "../../server/controller.js";
import { http } from "../helpers/http.js";
import { ROOT } from "../helpers/process.js";

type Cb<T> = (err: { statusCode?: number; error?: unknown } | Error | null, data?: T) => void;

interface NinjaDevice {
  fetch(cb: Cb<Record<string, unknown>>): void;
  actuate(command: string, cb: Cb<void>): void;
  subscribe(url: string, overwrite: boolean | Cb<void>, cb?: Cb<void>): void;
  unsubscribe(cb: Cb<void>): void;
  data<T = unknown[]>(start: number | Date | Cb<T>, end?: number | Date | Cb<T>, cb?: Cb<T>): void;
  last_heartbeat(cb: Cb<Record<string, unknown>>): void;
}
interface NinjaApp {
  devices(filter: string | Record<string, unknown> | Cb<Record<string, Record<string, unknown>>>, cb?: Cb<Record<string, Record<string, unknown>>>): void;
  device(guid: string): NinjaDevice;
}
interface NinjaModule {
  app(opts: { user_access_token?: string; access_token?: string }): NinjaApp;
}

const ORIGINAL_URI = "uri     = 'https://api.ninja.is/rest/v0/'";

/** Loads the client's source with its one base-URL constant pointed at `baseUrl`. */
function loadNinja(baseUrl: string): NinjaModule {
  const file = join(ROOT, "node_modules", "ninja-blocks", "index.js");
  const source = readFileSync(file, "utf8");
  expect(source.split(ORIGINAL_URI).length).toBe(2); // the constant is there, once
  const patched = source.replace(ORIGINAL_URI, `uri     = ${JSON.stringify(`${baseUrl}/`)}`);
  const mod = { exports: {} as NinjaModule };
  const fn = compileFunction(patched, ["exports", "require", "module", "__filename", "__dirname"], { filename: file });
  // `require('request')` resolves from the package's own folder (request 2.11.1).
  fn(mod.exports, createRequire(file), mod, file, dirname(file));
  return mod.exports;
}

/** Runs one callback-style client call as a promise that rejects with the client's error. */
function call<T>(run: (cb: Cb<T>) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    run((err, data) => (err ? reject(err) : resolve(data as T)));
  });
}

/** The error a callback-style call ends with (fails when it succeeds). */
async function callError(run: (cb: Cb<unknown>) => void): Promise<{ statusCode?: number; error?: unknown }> {
  try {
    await call(run);
  } catch (err) {
    return err as { statusCode?: number; error?: unknown };
  }
  throw new Error("the call succeeded");
}

const ADMIN = "ninja-admin-token-00000001";
const NODE = "NINJACLIENT00001";
const RELAY = `${NODE}_0_0_1002`;
const TEMP = `${NODE}_0_0_9`;

describe("ninja-blocks 0.1.3 against blockkit", () => {
  let dir: string;
  let server: BlockkitServer;
  let baseUrl: string;
  let blockToken: string;
  let app: NinjaApp;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-ninja-"));
    server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: dir, adminToken: ADMIN, pollHoldSeconds: 1, logger: pino({ level: "silent" }) });
    baseUrl = (await server.start()).baseUrl;
    const act = await http<{ token: string }>(`${baseUrl}/block/${NODE}/activate?user_access_token=${ADMIN}`);
    blockToken = act.body.token;
    const headers = { "x-service-token": blockToken };
    await http(`${baseUrl}/block/${NODE}/data`, { method: "POST", headers, json: { G: "0", V: 0, D: 1002, DA: "0" } });
    for (const DA of ["20.5", "21.5"]) {
      const r = await http(`${baseUrl}/block/${NODE}/heartbeat`, { method: "POST", headers, json: [{ G: "0", V: 0, D: 9, DA }] });
      expect(r.status).toBe(200);
    }
    app = loadNinja(baseUrl).app({ user_access_token: ADMIN });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("devices lists every device keyed by GUID, and filters by type", async () => {
    const all = await call<Record<string, Record<string, unknown>>>((cb) => app.devices(cb));
    expect(Object.keys(all).sort()).toEqual([TEMP, RELAY].sort());
    expect(all[TEMP]).toMatchObject({ device_type: "temperature", node: NODE, last_data: { DA: 21.5 } });
    const relays = await call<Record<string, Record<string, unknown>>>((cb) => app.devices("relay", cb));
    expect(Object.keys(relays)).toEqual([RELAY]);
  });

  it("device(guid).fetch returns the device, and an error for an unknown one", async () => {
    const d = await call<Record<string, unknown>>((cb) => app.device(RELAY).fetch(cb));
    expect(d).toMatchObject({ guid: RELAY, device_type: "relay", is_actuator: 1, gid: "0", vid: "0", did: "1002" });
    const err = await callError((cb) => app.device(`${NODE}_9_0_1002`).fetch(cb));
    expect(String(err.error)).toContain(`unknown device ${NODE}_9_0_1002`);
  });

  it("actuate queues the command that the block receives on its long-poll", async () => {
    await call<void>((cb) => app.device(RELAY).actuate("1", cb));
    const poll = await http(`${baseUrl}/block/${NODE}/commands`, { headers: { "x-service-token": blockToken } });
    expect(poll.body).toEqual({ DEVICE: [{ G: "0", V: 0, D: 1002, DA: "1", GUID: RELAY }] });
    const err = await callError((cb) => app.device(TEMP).actuate("1", cb));
    expect(String(err.error)).toContain("not an actuator");
  });

  it("subscribe and unsubscribe manage the device's callback (DELETE with a JSON type and no body)", async () => {
    const url = "http://127.0.0.1:9/ninja-hook";
    await call<void>((cb) => app.device(TEMP).subscribe(url, cb));
    const got = await http<{ data: { url: string } }>(`${baseUrl}/device/${TEMP}/callback?user_access_token=${ADMIN}`);
    expect(got.body.data.url).toBe(url);
    // A second subscribe without overwrite is refused: the callback exists.
    const again = await callError((cb) => app.device(TEMP).subscribe("http://127.0.0.1:9/other", cb));
    expect(String(again.error)).toContain("already has a callback");
    await call<void>((cb) => app.device(TEMP).unsubscribe(cb));
    const gone = await http(`${baseUrl}/device/${TEMP}/callback?user_access_token=${ADMIN}`);
    expect(gone.status).toBe(404);
    const twice = await callError((cb) => app.device(TEMP).unsubscribe(cb));
    expect(String(twice.error)).toContain("has no callback");
  });

  it("data returns the history, with and without a range", async () => {
    const points = await call<{ t: string; v: number }[]>((cb) => app.device(TEMP).data(cb));
    expect(points.map((p) => p.v)).toEqual([20.5, 21.5]);
    for (const p of points) expect(p.t).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0000$/);
    const now = Date.now();
    const ranged = await call<unknown[]>((cb) => app.device(TEMP).data(new Date(now - 60_000), new Date(now + 1000), cb));
    expect(ranged).toHaveLength(2);
    const empty = await call<unknown[]>((cb) => app.device(TEMP).data(now - 3_600_000, now - 1_800_000, cb));
    expect(empty).toEqual([]);
  });

  it("last_heartbeat returns the heartbeat record", async () => {
    const hb = await call<Record<string, unknown>>((cb) => app.device(TEMP).last_heartbeat(cb));
    expect(hb).toMatchObject({ G: "0", V: 0, D: 9, DA: 21.5, GUID: TEMP, node: NODE });
    expect(typeof hb.timestamp).toBe("number");
  });

  it("a wrong token is refused with the envelope's error", async () => {
    const bad = loadNinja(baseUrl).app({ user_access_token: "not-a-token" });
    const err = await callError((cb) => bad.devices(cb));
    expect(String(err.error)).toContain("unknown or revoked user_access_token");
  });
});
