/**
 * A pause and resume (the TUI's p key, chaos `pause`) keeps each device's phase: its next reading
 * comes after what it still had to wait at the pause. Restarting every generator at the resume put
 * the whole fleet in step, every block's reading in the same tick once a second, and the per-second
 * rates swung between none and twice the real one.
 *
 * The fleet's scheduler runs on a clock the test moves, so nothing fires by itself; the transport
 * answers in-process (activation a token, events 200, the long-poll never).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { BlockTransport, TransportRequest, TransportResponse } from "../../protocol/transport.js";
import { Scheduler } from "../../simulator/fleet/scheduler.js";
import { FleetSendWindow } from "../../simulator/fleet/send-window.js";
import { VirtualBlock } from "../../simulator/fleet/virtual-block.js";
import { Metrics } from "../../simulator/metrics/metrics.js";
import { Random } from "../../simulator/random.js";
import { validateScenario } from "../../simulator/scenario/parse.js";

const OK: TransportResponse = { status: 200, headers: {}, body: Buffer.from('{"result":1,"error":null,"id":0}') };
const TOKEN: TransportResponse = { status: 200, headers: {}, body: Buffer.from('{"token":"pause-token-0123456789"}') };

class InProcessTransport implements BlockTransport {
  send(r: TransportRequest): Promise<TransportResponse> {
    if (r.url.includes("/activate")) return Promise.resolve(TOKEN);
    if (r.url.endsWith("/commands")) return new Promise((_ok, fail) => r.signal?.addEventListener("abort", () => fail(new Error("aborted")), { once: true }));
    return Promise.resolve(OK);
  }
  async close(): Promise<void> {}
}

async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

let blocks: VirtualBlock[] = [];
let scheduler: Scheduler | null = null;

afterEach(async () => {
  scheduler?.stop();
  await Promise.all(blocks.map((b) => b.stop()));
  blocks = [];
});

describe("pause and resume", () => {
  it("keeps each device's phase: its next reading comes after what it still had to wait", async () => {
    const clock = { t: 1_000_000 };
    scheduler = new Scheduler(() => clock.t, 10);
    const s = validateScenario({ name: "phase", seed: 7, blocks: { count: 40, node_id: "PHASE{seed}N{index:6}" }, devices: [{ type: "temperature", rate: 1 }], duration_s: 1 });
    const ctx = { baseUrl: "http://127.0.0.1:9/rest/v0", transport: new InProcessTransport(), window: new FleetSendWindow(256), scheduler, metrics: new Metrics(), userToken: "u", onCommand() {}, onActivated() {}, log() {}, clock: () => clock.t };
    const rng = new Random(7);
    blocks = Array.from({ length: 40 }, (_v, i) => new VirtualBlock(i, `PHASE7N${String(i).padStart(6, "0")}`, s.devices, rng, ctx));
    await Promise.all(blocks.map((b) => b.start()));
    const device = (b: VirtualBlock) => [...b.devices.values()][0] as NonNullable<ReturnType<typeof b.devices.get>>;
    const scheduled = () => blocks.every((b) => device(b).job !== null);
    await until("every device's first reading is scheduled", scheduled);

    const before = blocks.map((b) => (device(b).job?.due as number) - clock.t);
    // Random phases over the second, as a fleet starts.
    expect(Math.max(...before) - Math.min(...before)).toBeGreaterThan(500);

    await Promise.all(blocks.map((b) => b.pause()));
    expect(blocks.every((b) => device(b).job === null)).toBe(true);
    clock.t += 5_000;
    await Promise.all(blocks.map((b) => b.resume()));
    await until("every device's next reading is scheduled again", scheduled);

    const after = blocks.map((b) => (device(b).job?.due as number) - clock.t);
    // Each device goes on where it was: not all of them a second after the resume.
    expect(after).toEqual(before);
  });
});
