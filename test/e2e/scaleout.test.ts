/**
 * Several server processes on one PostgreSQL database (each test run its own schema): a command PUT
 * on A wakes the long-poll held on B; a block token revoked on A is refused by B at once; an
 * activation claimed on A reaches the block waiting on B; the command of a poll held by an
 * instance killed with SIGKILL is delivered by another one; a camera snapshot uploaded to A reaches
 * the user waiting on B; PostgreSQL data written through A is read through B.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../helpers/http.js";
import { type CliProcess, spawnCli, startServerProcess, stopProcess } from "../helpers/process.js";
import { waitFor } from "../helpers/wait.js";
import { PG_AVAILABLE, PG_BASE_URL, pgSchemaUrl } from "../helpers/pg.js";

const ADMIN = "scaleout-admin-token-00001";
/** The long-poll hold: far above what a wake takes on a loaded machine, so the two never mix up. */
const HOLD_S = 30;
type Server = CliProcess & { baseUrl: string };

describe.skipIf(!PG_AVAILABLE)("several instances on PostgreSQL", () => {
  const db = pgSchemaUrl();
  const servers: Server[] = [];
  let a: Server;
  let b: Server;
  const start = async (): Promise<Server> => {
    const s = await startServerProcess({ dataDir: "/nonexistent-unused", adminToken: ADMIN, pollHoldSeconds: HOLD_S, extraArgs: ["--db", db.url] });
    servers.push(s);
    return s;
  };
  beforeAll(async () => {
    a = await start();
    b = await start();
  }, 60_000);
  afterAll(async () => {
    for (const s of servers) await stopProcess(s).catch(() => undefined);
    await db.drop();
  });

  const user = (path: string): string => `${path}${path.includes("?") ? "&" : "?"}user_access_token=${ADMIN}`;
  const activate = async (srv: Server, node: string): Promise<string> => {
    const res = await http<{ token: string }>(`${srv.baseUrl}${user(`/block/${node}/activate`)}`);
    expect(res.status).toBe(200);
    return res.body.token;
  };
  const post = (srv: Server, node: string, token: string, DA: string) =>
    http(`${srv.baseUrl}/block/${node}/data`, { method: "POST", headers: { "x-service-token": token }, json: { G: "0", V: 0, D: 1002, DA } });
  const poll = (srv: Server, node: string, token: string) =>
    http<{ DEVICE: { DA: string }[] }>(`${srv.baseUrl}/block/${node}/commands`, { headers: { "x-service-token": token } });
  /** Waits (bounded) until the instance holds `n` polls, from its /healthz. */
  const heldPolls = async (srv: Server, n: number): Promise<void> => {
    await waitFor(`${n} held polls`, async () => (await http<{ heldPolls: number }>(`${srv.baseUrl.replace(/\/rest\/v0$/, "")}/healthz`)).body.heldPolls === n, 10_000);
  };

  it("a command PUT on A answers the poll held on B, and data written through A is read through B", async () => {
    const node = "SCALEOUT00000001";
    const token = await activate(a, node);
    expect((await post(a, node, token, "0")).status).toBe(200);
    const guid = `${node}_0_0_1002`;
    const held = poll(b, node, token);
    // The poll is held on B (nothing queued) when A queues the command and NOTIFYs.
    await heldPolls(b, 1);
    const started = Date.now();
    expect((await http(`${a.baseUrl}${user(`/device/${guid}`)}`, { method: "PUT", json: { DA: "1" } })).status).toBe(200);
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(answer.body.DEVICE.map((c) => c.DA)).toEqual(["1"]);
    expect(Date.now() - started).toBeLessThan((HOLD_S / 2) * 1000); // woken, not the hold's end
    const dev = await http<{ data: { last_data: { DA: unknown } } }>(`${b.baseUrl}${user(`/device/${guid}`)}`);
    expect(dev.body.data.last_data.DA).toBe(0);
  });

  it("a block token revoked on A is refused by B at once (B had it in its cache)", async () => {
    const node = "SCALEOUT00000002";
    const token = await activate(a, node);
    expect((await post(b, node, token, "1")).status).toBe(200);
    expect((await post(b, node, token, "2")).status).toBe(200); // now answered from B's cache
    expect((await http(`${a.baseUrl}${user(`/block/${node}`)}`, { method: "DELETE" })).status).toBe(200);
    // NOTIFY is delivered within milliseconds; without it B would answer from its cache forever
    // (no expiry on PostgreSQL), so the bound only has to hold on a loaded machine.
    await waitFor("B refusing the token", async () => (await post(b, node, token, "3")).status === 401, 10_000);
  });

  it("a claim on A reaches the block waiting for activation on B", async () => {
    const node = "SCALEOUT00000003";
    const waiting = http<{ token: string }>(`${b.baseUrl}/block/${node}/activate`);
    // Claimable once B's request has registered the block as waiting.
    await waitFor("the claim on A", async () => (await http(`${a.baseUrl}${user("/block")}`, { method: "POST", json: { nodeid: node } })).status === 200, 15_000);
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(typeof answer.body.token).toBe("string");
    expect((await post(a, node, answer.body.token, "1")).status).toBe(200);
  });

  it("the command of a poll held by an instance killed with SIGKILL is delivered by another", async () => {
    const c = await start();
    const node = "SCALEOUT00000004";
    const token = await activate(a, node);
    expect((await post(a, node, token, "0")).status).toBe(200);
    const held = poll(c, node, token).catch(() => null);
    await heldPolls(c, 1);
    c.child.kill("SIGKILL");
    await held;
    expect((await http(`${a.baseUrl}${user(`/device/${node}_0_0_1002`)}`, { method: "PUT", json: { DA: "1" } })).status).toBe(200);
    const answer = await poll(b, node, token);
    expect(answer.body.DEVICE.map((x) => x.DA)).toEqual(["1"]);
  });

  it("a camera snapshot uploaded to A reaches the user waiting on B", async () => {
    const node = "SCALEOUT00000005";
    const token = await activate(a, node);
    const cam = `${node}_0_0_1004`;
    const posted = await http(`${a.baseUrl}/block/${node}/data`, { method: "POST", headers: { "x-service-token": token }, json: { G: "0", V: 0, D: 1004, DA: "0" } });
    expect(posted.status).toBe(200);
    const streamOf = async (srv: Server): Promise<string> => ((await srv.waitForLine(/^stream_url\s+(\S+)/))[1] as string).replace(/\/$/, "");
    const jpeg = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(4096, 9), Buffer.from([0xff, 0xd9])]);
    // The user asks B; B queues the snapshot command; the block, polling A, uploads to A.
    const waiting = fetch(`${await streamOf(b)}/rest/v0/camera/${cam}/snapshot?user_access_token=${ADMIN}`);
    const cmds = await poll(a, node, token);
    expect(cmds.body.DEVICE).toEqual([expect.objectContaining({ GUID: cam, DA: "1" })]);
    const up = await fetch(`${await streamOf(a)}/rest/v0/camera/${cam}/snapshot`, {
      method: "POST",
      headers: { "x-service-token": token, "content-type": "image/jpeg" },
      body: jpeg,
    });
    expect(up.status).toBe(200);
    await up.arrayBuffer();
    const res = await waiting;
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect(Buffer.from(await res.arrayBuffer()).equals(jpeg)).toBe(true);
  });
});

describe.skipIf(!PG_AVAILABLE)("blockkit migrate on PostgreSQL", () => {
  it("applies the migrations once, creates the readings partitions ahead, and says up to date after", async () => {
    const db = pgSchemaUrl();
    try {
      const first = spawnCli(["migrate", "--db", db.url]);
      await first.waitForLine(/^applied 001-core/);
      expect(await first.exited).toBe(0);
      expect(first.stdout.join("\n")).toMatch(/^applied 001-core/);
      const again = spawnCli(["migrate", "--db", db.url]);
      expect(await again.exited).toBe(0);
      await again.waitForLine(/^up to date$/);
      const client = new pg.Client({ connectionString: PG_BASE_URL });
      await client.connect();
      const parts = await client.query(
        "SELECT count(*)::int AS n FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhparent JOIN pg_namespace s ON s.oid = c.relnamespace WHERE c.relname = 'readings' AND s.nspname = $1",
        [db.schema],
      );
      await client.end();
      expect((parts.rows[0] as { n: number }).n).toBe(3); // this month and the next two
    } finally {
      await db.drop();
    }
  });
});
