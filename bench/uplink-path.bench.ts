/**
 * The simulator's per-reading path alone (`npm run bench -- uplink-path`): a fleet of VirtualBlocks
 * (scheduler, generator, BlockAgent, outbox, uplink, send window, block client, metrics) whose
 * transport is an in-process fake that answers every reading 200 on the next turn, against the bare
 * loop's work (the same JSON body, URL and request per reading) over the same fake. No sockets, no
 * peer process: what the agent path costs per acknowledged reading, with far less noise than the
 * simulator bench's run against the sink (whose socket writes are half of the bare loop's CPU).
 *
 * Env: BENCH_PATH_BLOCKS (default 10000), BENCH_PATH_RATE (readings a second per block, default 1;
 * the same readings a second from a tenth of the blocks at 10 shows what touching many blocks' cold
 * objects costs, apart from the work), BENCH_PATH_SECONDS (per round,
 * default 4), BENCH_PATH_ROUNDS (default 3), BENCH_PATH_ROOT (the root of another build to measure,
 * e.g. a worktree of main; default this one). Run with `--max-semi-space-size=32` to match
 * `blockkit sim` (cli/respawn.ts).
 */
import { join } from "node:path";
import type { BlockTransport, TransportCallbacks, TransportRequest, TransportResponse } from "../protocol/transport.js";
import { figure, machine, median, sendEverySecond } from "./lib.js";

const ROOT = process.env.BENCH_PATH_ROOT ?? join(import.meta.dirname, "..");
const BLOCKS = Number(process.env.BENCH_PATH_BLOCKS ?? 10_000);
const RATE = Number(process.env.BENCH_PATH_RATE ?? 1);
if (!Number.isInteger(RATE) || RATE < 1 || RATE > 100) throw new Error(`BENCH_PATH_RATE must be a whole number of readings a second from 1 to 100, got ${process.env.BENCH_PATH_RATE}`);
const SECONDS = Number(process.env.BENCH_PATH_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_PATH_ROUNDS ?? 3);
const OK: TransportResponse = { status: 200, headers: {}, body: Buffer.from('{"result":1,"error":null,"id":0}') };
const TOKEN: TransportResponse = { status: 200, headers: {}, body: Buffer.from('{"token":"path-token-0123456789"}') };

/**
 * Answers readings on the next turn (all of a turn's at once), activation at once, polls never.
 * Readings come by send() or, as over the simulator's Http1Transport, by dispatch().
 */
class FakeTransport implements BlockTransport {
  private pending: TransportCallbacks[] = [];
  send(r: TransportRequest): Promise<TransportResponse> {
    if (r.url.includes("/activate")) return Promise.resolve(TOKEN);
    if (r.url.endsWith("/commands")) return new Promise((_ok, fail) => r.signal?.addEventListener("abort", () => fail(new Error("aborted")), { once: true }));
    return new Promise((resolve, reject) => this.dispatch(r, { answered: resolve, failed: reject }));
  }
  dispatch(_r: TransportRequest, cb: TransportCallbacks): void {
    this.pending.push(cb);
    if (this.pending.length === 1) setImmediate(() => this.flush());
  }
  private flush(): void {
    const answered = this.pending;
    this.pending = [];
    for (const cb of answered) cb.answered(OK);
  }
  async close(): Promise<void> {}
}

const wait = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** CPU µs per unit of `count()` over each round, after a 2 s warm-up. */
async function rounds(count: () => number): Promise<number[]> {
  await wait(2000);
  const out: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const cpu0 = process.cpuUsage();
    const n0 = count();
    await wait(SECONDS * 1000);
    const cpu = process.cpuUsage(cpu0);
    out.push((cpu.user + cpu.system) / (count() - n0));
  }
  return out;
}

async function fleetPath(): Promise<number[]> {
  const { VirtualBlock } = (await import(`${ROOT}/dist/simulator/fleet/virtual-block.js`)) as typeof import("../simulator/fleet/virtual-block.js");
  const { Scheduler } = (await import(`${ROOT}/dist/simulator/fleet/scheduler.js`)) as typeof import("../simulator/fleet/scheduler.js");
  const { FleetSendWindow } = (await import(`${ROOT}/dist/simulator/fleet/send-window.js`)) as typeof import("../simulator/fleet/send-window.js");
  const { Metrics } = (await import(`${ROOT}/dist/simulator/metrics/metrics.js`)) as typeof import("../simulator/metrics/metrics.js");
  const { Random } = (await import(`${ROOT}/dist/simulator/random.js`)) as typeof import("../simulator/random.js");
  const { validateScenario } = (await import(`${ROOT}/dist/simulator/scenario/parse.js`)) as typeof import("../simulator/scenario/parse.js");
  const s = validateScenario({ name: "path", seed: 1, blocks: { count: BLOCKS, node_id: "PATH{seed}N{index:8}" }, devices: [{ type: "temperature", rate: RATE }], duration_s: 1 });
  const metrics = new Metrics();
  const scheduler = new Scheduler(Date.now, 10);
  const ctx = { baseUrl: "http://127.0.0.1:9/rest/v0", transport: new FakeTransport(), window: new FleetSendWindow(256), scheduler, metrics, userToken: "u", onCommand() {}, onActivated() {}, log() {} };
  const rng = new Random(1);
  const blocks = Array.from({ length: BLOCKS }, (_v, i) => new VirtualBlock(i, `PATH1N${String(i).padStart(8, "0")}`, s.devices, rng, ctx));
  for (const b of blocks) await b.start();
  const result = await rounds(() => metrics.counters.events_acked);
  scheduler.stop();
  await Promise.all(blocks.map((b) => b.stop()));
  return result;
}

/** The bare loop of simulator.bench.ts, over the fake transport. */
async function barePath(): Promise<number[]> {
  const transport = new FakeTransport();
  const nodes = Array.from({ length: BLOCKS }, (_v, i) => `BARE${String(i).padStart(8, "0")}`);
  let acked = 0;
  let seq = 0;
  const send = (i: number): void => {
    const body = JSON.stringify({ G: "1", V: 0, D: 9, DA: (20 + Math.random()).toFixed(1), TIMESTAMP: Date.now(), KEY: `bare.${(seq++).toString(36)}` });
    void transport.send({ method: "POST", url: `http://127.0.0.1:9/rest/v0/block/${nodes[i]}/data`, headers: { "x-service-token": "t", "content-type": "application/json" }, body, timeoutMs: 15_000 }).then((res) => {
      if (res.status === 200) acked++;
    });
  };
  // RATE sends a second per block: BLOCKS × RATE slots, slot k for block k mod BLOCKS.
  const stopSending = sendEverySecond(BLOCKS * RATE, (k) => send(k % BLOCKS));
  const result = await rounds(() => acked);
  stopSending();
  return result;
}

process.stdout.write(`machine: ${machine()}\nper-reading path of ${ROOT}, ${BLOCKS} blocks × ${RATE} reading${RATE === 1 ? "" : "s"}/s, ${ROUNDS} rounds of ${SECONDS} s:\n`);
const fleet = await fleetPath();
const bare = await barePath();
figure("  fleet path CPU per acknowledged reading (median)", median(fleet), `µs (rounds ${fleet.map((x) => x.toFixed(1)).join(", ")})`);
figure("  bare loop's work over the same fake (median)", median(bare), `µs (rounds ${bare.map((x) => x.toFixed(1)).join(", ")})`);
process.exit(0);
