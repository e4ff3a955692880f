/**
 * The set-up of the leased-work tests (leases-callbacks.test.ts, leases-rules.test.ts): two server
 * instances A and B on one PostgreSQL schema with 1 s leases, a third started by a test to be killed,
 * a callback receiver, a SQL client on the schema, and the calls the tests make. Apart because
 * both files run on it. The instances, receiver and client are set in beforeAll (ES module live
 * bindings: an importer reads them once started).
 */
import pg from "pg";
import { afterAll, beforeAll, expect } from "vitest";
import { type Receiver, startReceiver } from "../server/automation/helpers.js";
import { http } from "../helpers/http.js";
import { PG_BASE_URL, pgSchemaUrl } from "../helpers/pg.js";
import { type CliProcess, startServerProcess, stopProcess } from "../helpers/process.js";

const ADMIN = "leases-admin-token-000001";
export type Server = CliProcess & { baseUrl: string };

export const db = pgSchemaUrl();
const servers: Server[] = [];
export let a: Server;
export let b: Server;
export let receiver: Receiver;
export let sql: pg.Client;
export const start = async (lease = 1, env: NodeJS.ProcessEnv = {}): Promise<Server> => {
  const s = await startServerProcess({ dataDir: "/nonexistent-unused", adminToken: ADMIN, pollHoldSeconds: 10, extraArgs: ["--db", db.url, "--lease", String(lease)], env });
  servers.push(s);
  return s;
};

/** Starts A, B, the receiver and the SQL client before the calling file's tests; stops them and drops the schema after. */
export function useInstances(): void {
  beforeAll(async () => {
    a = await start();
    b = await start();
    receiver = await startReceiver();
    sql = new pg.Client({ connectionString: PG_BASE_URL });
    await sql.connect();
  }, 60_000);
  afterAll(async () => {
    for (const s of servers) await stopProcess(s).catch(() => undefined);
    await sql?.end();
    await receiver?.close();
    await db.drop();
  });
}

export const user = (path: string): string => `${path}${path.includes("?") ? "&" : "?"}user_access_token=${ADMIN}`;
export const count = async (table: string): Promise<number> => Number((await sql.query(`SELECT count(*) AS n FROM ${db.schema}.${table}`)).rows[0].n);
export const activate = async (node: string): Promise<string> => {
  const res = await http<{ token: string }>(`${a.baseUrl}${user(`/block/${node}/activate`)}`);
  expect(res.status).toBe(200);
  return res.body.token;
};
export const post = async (srv: Server, node: string, token: string, D: number, DA: string): Promise<void> => {
  const res = await http(`${srv.baseUrl}/block/${node}/data`, { method: "POST", headers: { "x-service-token": token }, json: { G: "0", V: 0, D, DA } });
  expect(res.status).toBe(200);
};
export const setCallback = async (guid: string, path: string): Promise<void> => {
  const res = await http(`${a.baseUrl}${user(`/device/${guid}/callback`)}`, { method: "POST", json: { url: `${receiver.url}${path}` } });
  expect(res.status).toBe(200);
};
export const deliveries = (path: string) => receiver.received.filter((r) => r.url === path);
/**
 * Runs `f` with A and B stopped (SIGSTOP), then lets them go on: the work C commits meanwhile is
 * leased by C itself. Otherwise a poll of A or B (every 0.5 s) may lease C's delivery before C's
 * own claim, which follows its commit: 3 deliveries in 40 on this machine under load. The test
 * then killed an instance that held nothing and waited in vain for a second attempt.
 */
export const withOthersStopped = async <T>(f: () => Promise<T>): Promise<T> => {
  for (const s of [a, b]) s.child.kill("SIGSTOP");
  try {
    return await f();
  } finally {
    for (const s of [a, b]) s.child.kill("SIGCONT");
  }
};
