/**
 * The gateway on a full disk, for real: the state dir on a small tmpfs. The outbox's byte bound
 * holds before the filesystem fills (drop-oldest, counted, never SQLITE_FULL); when another writer
 * fills the disk the outbox refuses appends and stores nothing; the daemon stays up, the embedded
 * broker does not PUBACK a refused reading (the node keeps it and sends it again), /healthz says
 * degraded with `outbox.full`, the backlog keeps replaying, and readings are taken again once the
 * space returns.
 */
import { join } from "node:path";
import mqtt from "mqtt";
import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteOutbox } from "../../gateway/agent/sqlite-outbox.js";
import { type NewOutboxEntry, OutboxFullError } from "../../gateway/agent/types.js";
import { loadConfig } from "../../gateway/daemon/config.js";
import { Gateway } from "../../gateway/daemon/gateway.js";
import { SmallFs } from "../helpers/small-fs.js";
import { ADMIN_TOKEN, type LiveServer, startLive } from "../helpers/live.js";
import { waitFor } from "../helpers/wait.js";

const MiB = 2 ** 20;
const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

function mount(bytes: number): SmallFs {
  const fs = SmallFs.mount(bytes);
  cleanup.push(() => fs.unmount());
  return fs;
}

const big = "x".repeat(400);
let seq = 0;
function entries(n: number): NewOutboxEntry[] {
  return Array.from({ length: n }, () => ({ kind: "data", G: "1", V: 0, D: 9, DA: big, value: null, ts: Date.now(), key: `k${seq++}` }) as NewOutboxEntry);
}

describe("SQLite outbox on a small filesystem", () => {
  it("drops the oldest before the filesystem fills, and refuses (storing nothing) when another writer filled it", () => {
    const fs = mount(8 * MiB);
    const o = new SqliteOutbox(join(fs.dir, "outbox.db"), { reserveBytes: MiB });
    cleanup.push(() => o.close());
    // 30,000 readings of ~420 bytes: 12 MB of payload into 8 MiB, far below the configured maxBytes.
    for (let i = 0; i < 300; i++) o.append(entries(100));
    const s = o.stats();
    expect(s.dropped).toBeGreaterThan(0);
    expect(s.full).toBe(false);
    expect(fs.free()).toBeGreaterThanOrEqual(MiB / 2);
    const newest = o.peek(s.rows).at(-1);
    expect(newest?.key).toBe(`k${seq - 1}`);

    fs.fill(MiB / 4);
    expect(() => o.append(entries(1))).toThrow(OutboxFullError);
    expect(o.stats()).toMatchObject({ rows: s.rows, full: true });
    // Replaying goes on: acknowledged entries leave the outbox within the reserve.
    o.ack(o.peek(50).map((e) => e.id));
    expect(o.stats().rows).toBe(s.rows - 50);
    fs.unfill();
    expect(o.stats().full).toBe(false);
    expect(o.append(entries(1))).toBeGreaterThanOrEqual(0);
    expect(o.stats().rows).toBeGreaterThan(0);
  });

  it("takes SQLITE_FULL itself as a refusal: no reserve, a disk filled to the last byte", () => {
    const fs = mount(4 * MiB);
    const o = new SqliteOutbox(join(fs.dir, "outbox.db"), { reserveBytes: 0 });
    cleanup.push(() => o.close());
    o.append(entries(10));
    fs.fill(0);
    let refused: unknown = null;
    for (let i = 0; i < 2000 && !refused; i++) {
      try {
        o.append(entries(20));
      } catch (err) {
        refused = err;
      }
    }
    expect(refused).toBeInstanceOf(OutboxFullError);
    expect(String((refused as Error).message)).toMatch(/SQLITE_FULL|below the reserve/);
    const rows = o.stats().rows;
    expect(o.peek(100_000)).toHaveLength(rows);
    fs.unfill();
    expect(o.stats().full).toBe(false);
    o.append(entries(1));
    expect(o.stats().rows).toBe(rows + 1);
  });
});

describe("gateway daemon with its state dir on a full disk", () => {
  it("stays up, PUBACKs only stored readings, says degraded, keeps replaying, and takes readings again", async () => {
    const fs = mount(12 * MiB);
    // Activated against a live server first, which then goes away: the uplink's backoff stays short
    // (activation against a server that was never there backs off for longer on a loaded machine).
    // On a port the kernel picks; it comes back on the same one, the gateway's configured server.
    let srv: LiveServer = await startLive();
    const srvDir = srv.dir;
    const port = Number(new URL(srv.authUrl).port);
    cleanup.push(() => srv.close());
    const config = loadConfig({
      flags: { server: srv.authUrl, nodeId: "FULLDISK0001", userToken: ADMIN_TOKEN, stateDir: join(fs.dir, "state"), mqttListen: 0, healthPort: 0, logLevel: "silent" },
      env: {},
    });
    const gw = new Gateway({ ...config, mqtt: { ...config.mqtt, listenHost: "127.0.0.1" }, outbox: { ...config.outbox, reserveBytes: 2 * MiB } } as typeof config);
    await gw.start();
    cleanup.push(() => gw.stop());
    await waitFor("gateway online", () => gw.agent.currentState === "online");
    await srv.close({ keepDir: true });
    const health = async (): Promise<{ status: string; outbox: { rows: number; full: boolean; refused: number } }> =>
      (await (await request(`${gw.health?.url}/healthz`)).body.json()) as never;

    const node = await mqtt.connectAsync(gw.broker?.url ?? "", { clientId: "fulldisk-node", reconnectPeriod: 100 });
    cleanup.push(() => node.endAsync(true));
    for (let i = 0; i < 5; i++) await node.publishAsync("blockkit/3_0_9/data", String(i), { qos: 1 });
    expect((await health()).outbox.rows).toBe(5);

    fs.fill(MiB / 2);
    let acked = false;
    const late = node.publishAsync("blockkit/3_0_9/data", "5", { qos: 1 }).then(() => (acked = true));
    const h = await waitFor("refusal on /healthz", async () => {
      const x = await health();
      return x.outbox.refused > 0 ? x : null;
    });
    expect(h).toMatchObject({ status: "degraded", outbox: { rows: 5, full: true } });
    expect(acked).toBe(false);
    const metrics = await (await request(`${gw.health?.url}/metrics`)).body.text();
    expect(metrics).toMatch(/blockkit_gateway_outbox_full 1/);
    expect(metrics).toMatch(/blockkit_gateway_readings_refused_total [1-9]/);

    // The server comes up while the disk is still full: the backlog is replayed all the same.
    srv = await startLive({ port, dir: srvDir });
    await waitFor("backlog replayed", async () => (await health()).outbox.rows === 0, 20_000);
    expect(acked).toBe(false);

    fs.unfill();
    await late; // the node sent it again after its reconnect, and this time it was stored and PUBACKed
    const readings = await waitFor("six readings at the server", async () => {
      const x = await srv.history("FULLDISK0001_3_0_9");
      return x.length === 6 ? x : null;
    }, 20_000);
    expect(readings.map((r) => String(r.v))).toEqual(["0", "1", "2", "3", "4", "5"]);
    expect((await health()).outbox.full).toBe(false);
  });
});
