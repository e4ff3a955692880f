/**
 * PostgreSQL restarted under load, with two server processes on it (a throwaway PostgreSQL of this
 * test's own, stopped as in a crash and started again): while it is down the servers answer 503,
 * never another error; every event they acknowledged is in the database after; they recover on
 * their own (the pool reconnects, the Bus's LISTEN connection reconnects and re-reads what it may
 * have missed), so a command PUT on A again reaches the poll held on B.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../helpers/http.js";
import { waitFor } from "../helpers/wait.js";
import { PG_BINARIES, type PgInstance, startPgInstance } from "../helpers/pg-instance.js";
import { type CliProcess, startServerProcess, stopProcess } from "../helpers/process.js";

const ADMIN = "pgrestart-admin-token-0001";
const NODE = "PGRESTART0000001";
/** The long-poll hold: far above a wake (or the Bus's reconnect, at most 5 s apart) on a loaded machine. */
const HOLD_S = 30;
type Server = CliProcess & { baseUrl: string };

describe.skipIf(!PG_BINARIES)("PostgreSQL restarted under load", () => {
  let db: PgInstance;
  const servers: Server[] = [];
  let token = "";

  beforeAll(async () => {
    db = await startPgInstance();
    for (let i = 0; i < 2; i++) {
      servers.push(await startServerProcess({ dataDir: "/nonexistent-unused", adminToken: ADMIN, pollHoldSeconds: HOLD_S, extraArgs: ["--db", db.url] }));
    }
    const res = await http<{ token: string }>(`${servers[0]?.baseUrl}/block/${NODE}/activate?user_access_token=${ADMIN}`);
    expect(res.status).toBe(200);
    token = res.body.token;
  }, 90_000);
  afterAll(async () => {
    for (const s of servers) await stopProcess(s).catch(() => undefined);
    await db?.dispose();
  });

  it("answers 503 while it is down, loses nothing it acknowledged, and recovers on its own", async () => {
    const [a, b] = servers as [Server, Server];
    const acked = new Map<string, string[]>();
    const statuses = new Map<number, number>();
    /** Per server, the time of its last 503 and of its last 200. */
    const seen = servers.map(() => ({ unavailable: 0, ok: 0 }));
    let running = true;
    // Four writers, two per server, each on a device of its own with increasing values.
    const writer = async (w: number): Promise<void> => {
      const s = w % 2;
      const srv = servers[s] as Server;
      const guid = `${NODE}_${w}_0_9`;
      acked.set(guid, []);
      for (let n = 1; running; n++) {
        let status: number;
        try {
          const res = await fetch(`${srv.baseUrl}/block/${NODE}/data`, {
            method: "POST",
            headers: { "content-type": "application/json", "x-service-token": token },
            body: JSON.stringify({ G: String(w), V: 0, D: 9, DA: String(n) }),
            signal: AbortSignal.timeout(15_000),
          });
          await res.arrayBuffer();
          status = res.status;
        } catch {
          status = -1; // no answer at all
        }
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status === 200) {
          acked.get(guid)?.push(String(n));
          (seen[s] as { ok: number }).ok = Date.now();
        } else if (status === 503) {
          (seen[s] as { unavailable: number }).unavailable = Date.now();
          // A client backs off: spin less while the database is down.
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    };
    const writers = [0, 1, 2, 3].map((w) => writer(w));
    const total = (): number => [...acked.values()].reduce((t, v) => t + v.length, 0);
    await waitFor("40 acknowledged events before the restart", async () => total() >= 40, 10_000);

    await db.stop("immediate");
    const down = Date.now();
    await waitFor("a 503 from each server", async () => seen.every((x) => x.unavailable > down), 10_000)
    await db.start();
    const up = Date.now();
    await waitFor("each server acknowledging again", async () => seen.every((x) => x.ok > up), 20_000);
    const after = total();
    await waitFor("20 more events", async () => total() >= after + 20, 10_000);
    running = false;
    await Promise.all(writers);

    // Only 200 and 503: no 500, no dropped connection.
    expect([...statuses.keys()].sort()).toEqual([200, 503]);
    // Every acknowledged event was committed.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const rows = (await client.query<{ guid: string; da: string }>("SELECT d.guid, r.da FROM readings r JOIN devices d ON d.id = r.device_id")).rows;
      const stored = new Set(rows.map((r) => `${r.guid} ${r.da}`));
      for (const [guid, values] of acked) for (const v of values) expect(stored.has(`${guid} ${v}`), `${guid} ${v}`).toBe(true);
    } finally {
      await client.end();
    }

    // The Bus came back: a command PUT on A reaches the poll held on B.
    const guid = `${NODE}_0_0_1002`;
    const relay = await http(`${a.baseUrl}/block/${NODE}/data`, { method: "POST", headers: { "x-service-token": token }, json: { G: "0", V: 0, D: 1002, DA: "off" } });
    expect(relay.status).toBe(200);
    const held = http<{ DEVICE: { DA: string }[] }>(`${b.baseUrl}/block/${NODE}/commands`, { headers: { "x-service-token": token } });
    await waitFor("the poll held on B", async () => {
        const h = await http<{ heldPolls: number }>(`${b.baseUrl.replace(/\/rest\/v0$/, "")}/healthz`);
        return h.body.heldPolls === 1 ? true : undefined;
      }, 10_000);
    const put = Date.now();
    expect((await http(`${a.baseUrl}/device/${guid}?user_access_token=${ADMIN}`, { method: "PUT", json: { DA: "on" } })).status).toBe(200);
    const answer = await held;
    expect(answer.body.DEVICE.map((c) => c.DA)).toEqual(["on"]);
    expect(Date.now() - put).toBeLessThan((HOLD_S / 2) * 1000); // woken (or re-read after the Bus reconnected), not the hold's end
  }, 90_000);
});
