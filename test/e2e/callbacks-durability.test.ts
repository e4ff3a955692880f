/**
 * Callback deliveries that survive the loss of the embedded store's one process: an event
 * acknowledged while its delivery was not made yet (the receiver down, or holding the answer) is
 * delivered after a SIGKILL and a restart, once. Real server processes on one data directory, a
 * real HTTP receiver on loopback.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DELIVERY_HEADER } from "../../protocol/automation.js";
import { type Receiver, startReceiver } from "../server/automation/helpers.js";
import { http } from "../helpers/http.js";
import { waitFor } from "../helpers/wait.js";
import { type CliProcess, startServerProcess, stopProcess } from "../helpers/process.js";

const ADMIN = "callbacks-durable-admin-01";
const NODE = "CALLBACKDURABLE1";
const GUID = `${NODE}_0_0_9`;
type Server = CliProcess & { baseUrl: string };

describe("callback deliveries across a SIGKILL of the embedded store's process", () => {
  let dir: string;
  const procs: CliProcess[] = [];
  const receivers: Receiver[] = [];
  const start = async (): Promise<Server> => {
    const p = await startServerProcess({ dataDir: dir, adminToken: ADMIN, pollHoldSeconds: 10 });
    procs.push(p);
    return p;
  };
  const receiver = async (port?: number): Promise<Receiver> => {
    const r = await startReceiver(port);
    receivers.push(r);
    return r;
  };
  const kill = async (p: Server): Promise<void> => {
    p.child.kill("SIGKILL");
    expect(await p.exited).toBe("SIGKILL");
  };
  /** The deliveries waiting in the server's database, read beside it (WAL: a reader does not block it). */
  const outbox = (): { da: string; attempts: number }[] => {
    const db = new Database(join(dir, "blockkit.db"), { readonly: true, fileMustExist: true });
    try {
      return db.prepare("SELECT da, attempts FROM callback_outbox ORDER BY id").all() as { da: string; attempts: number }[];
    } finally {
      db.close();
    }
  };
  const user = (path: string): string => `${path}${path.includes("?") ? "&" : "?"}user_access_token=${ADMIN}`;
  const post = async (srv: Server, token: string, DA: string): Promise<void> => {
    const res = await http(`${srv.baseUrl}/block/${NODE}/data`, { method: "POST", headers: { "x-service-token": token }, json: { G: "0", V: 0, D: 9, DA } });
    expect(res.status).toBe(200);
  };
  /** The block, its device, and a callback of the device to `url`. */
  const setUp = async (srv: Server, url: string): Promise<string> => {
    const activated = await http<{ token: string }>(`${srv.baseUrl}${user(`/block/${NODE}/activate`)}`);
    expect(activated.status).toBe(200);
    const token = activated.body.token;
    await post(srv, token, "0");
    const res = await http(`${srv.baseUrl}${user(`/device/${GUID}/callback`)}`, { method: "POST", json: { url } });
    expect(res.status).toBe(200);
    return token;
  };
  const DA = (r: { body: Buffer }): unknown => (JSON.parse(r.body.toString()) as { DA: unknown }).DA;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-callbacks-durable-"));
  });
  afterEach(async () => {
    for (const p of procs.splice(0)) await stopProcess(p, "SIGKILL");
    for (const r of receivers.splice(0)) {
      r.release();
      await r.close();
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("an event acknowledged while the receiver was down is delivered once after the restart", async () => {
    // A port that nothing listens on until the receiver comes back up on it.
    const down = await receiver();
    const url = `${down.url}/cb`;
    const port = Number(new URL(down.url).port);
    await down.close();
    receivers.splice(receivers.indexOf(down), 1);

    const first = await start();
    const token = await setUp(first, url);
    await post(first, token, "42");
    // Acknowledged: its delivery is on disk with it (its first attempt refused, or not made yet).
    expect(outbox().map((r) => r.da)).toEqual(["42"]);
    await kill(first);

    const up = await receiver(port);
    await start();
    const got = await up.nth(1, 15_000);
    expect(DA(got)).toBe(42);
    await waitFor("an empty outbox", () => outbox().length === 0, 10_000);
    // Once: nothing is left to deliver, and nothing else arrived.
    expect(up.received).toHaveLength(1);
  }, 60_000);

  it("a delivery in flight when the process was killed is made again after the restart, once, with the same delivery id", async () => {
    const r = await receiver();
    const first = await start();
    const token = await setUp(first, `${r.url}/cb`);
    r.hold = true;
    await post(first, token, "7");
    const held = await r.nth(1, 10_000);
    expect(DA(held)).toBe(7);
    await kill(first);
    r.hold = false;

    await start();
    const again = await r.nth(2, 15_000);
    expect(DA(again)).toBe(7);
    expect(again.headers[DELIVERY_HEADER]).toBe(held.headers[DELIVERY_HEADER]);
    await waitFor("an empty outbox", () => outbox().length === 0, 10_000);
    expect(r.received).toHaveLength(2);
  }, 60_000);
});
