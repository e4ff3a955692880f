/**
 * The embedded store's write lock held by another connection past busy_timeout (5 s), as the
 * ingest thread's back-to-back group commits hold it under a fleet's load: a write on the event
 * loop's connection (a device's name, a block's activation) answers 503 with the envelope and a
 * message that names the lock, not 500 "internal error"; the store is not marked degraded; and the
 * same write goes through once the lock is free.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockkitServer } from "../../server/controller.js";
import { DB_FILE } from "../../server/store/sqlite/files.js";

const TOKEN = "admin-token-0123456789";
const NODE = "BUSYSTORE001";
const NODE2 = "BUSYSTORE002";
const TEMP = `${NODE}_0_0_9`;
let dir: string;
let server: BlockkitServer;

const call = async (method: "GET" | "POST" | "PUT", url: string, payload?: object, headers: Record<string, string> = {}) => {
  const res = await server.api.inject({ method, url: `/rest/v0${url}${url.includes("?") ? "&" : "?"}user_access_token=${TOKEN}`, headers, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json() as { result: number; error: string | null; id?: number; token?: string } };
};

/** Runs `fn` while another connection holds the database's write lock. */
async function withWriteLockHeld<T>(fn: () => Promise<T>): Promise<T> {
  const other = new Database(join(dir, DB_FILE));
  other.pragma("busy_timeout = 5000");
  other.exec("BEGIN IMMEDIATE");
  try {
    return await fn();
  } finally {
    other.exec("ROLLBACK");
    other.close();
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "bk-busy-"));
  server = new BlockkitServer({ dataDir: dir, logger: pino({ level: "silent" }), adminToken: TOKEN, pollHoldSeconds: 1 });
  await server.init();
  const act = await call("GET", `/block/${NODE}/activate`);
  expect(act.status).toBe(200);
  const r = await call("POST", `/block/${NODE}/data`, { G: "0", V: 0, D: 9, DA: "21.5" }, { "x-service-token": act.body.token as string });
  expect(r.status).toBe(200);
});

afterAll(async () => {
  try {
    await server?.stop();
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
});

describe("the embedded store's write lock held past busy_timeout", () => {
  it("answers 503 naming the lock (not 500), keeps the store healthy, and takes the write once the lock is free", async () => {
    const [rename, activate] = await withWriteLockHeld(async () => [await call("PUT", `/device/${TEMP}`, { shortName: "kitchen" }), await call("GET", `/block/${NODE2}/activate`)]);
    for (const r of [rename, activate]) {
      expect(r.status, JSON.stringify(r.body)).toBe(503);
      expect(r.body).toEqual({ result: 0, error: expect.stringMatching(/^the store is busy \(SQLITE_BUSY\w*\); nothing was stored, retry$/), id: 0 });
    }
    const health = await server.api.inject({ method: "GET", url: "/healthz" });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toMatchObject({ ok: true, status: "ok" });

    expect((await call("PUT", `/device/${TEMP}`, { shortName: "kitchen" })).status).toBe(200);
    const again = await call("GET", `/block/${NODE2}/activate`);
    expect(again.status).toBe(200);
    expect(typeof again.body.token).toBe("string");
    const device = await call("GET", `/device/${TEMP}`);
    expect(JSON.stringify(device.body)).toContain("kitchen");
  }, 30_000);
});
