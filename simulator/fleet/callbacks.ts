/**
 * Registers the simulator's own receiver as the callback URL of a few sensor devices (PUT, so a
 * second run replaces rather than conflicts), once each device exists on the server (after its
 * block's PLUGIN announcements were acknowledged; a 404 is asked again on the next tick, a 429 on
 * the first tick once the server's Retry-After has passed).
 */
import { retryAfterOf } from "../../gateway/agent/backoff.js";
import type { ApiClient } from "../../protocol/api-client.js";
import type { CallbackReceiver } from "../callback-receiver.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Fleet } from "./fleet.js";
import type { SimDevice, VirtualBlock } from "./virtual-block.js";

interface Wanted {
  block: VirtualBlock;
  device: SimDevice;
  tries: number;
}

export class CallbackRegistrar {
  private wanted: Wanted[] = [];
  private busy = false;
  /** After a 429: no registration before this time (the fleet's clock, ms), the server's Retry-After. */
  private notBefore = 0;
  /** GUIDs with a registered callback. */
  readonly registered: string[] = [];

  constructor(
    private readonly fleet: Fleet,
    private readonly api: ApiClient,
    private readonly receiver: CallbackReceiver,
    private readonly metrics: Metrics,
    private readonly count: number,
    private readonly log: (level: "info" | "warn" | "error", text: string) => void,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Picks the devices: periodic sensors first, spread over the blocks. */
  plan(): void {
    const sensors: Wanted[] = [];
    for (const block of this.fleet.blocks) {
      for (const device of block.devices.values()) {
        if (device.kind === "sensor") sensors.push({ block, device, tries: 0 });
        if (sensors.length >= this.count * 4) break;
      }
    }
    // Round-robin over blocks so ten callbacks hit ten blocks rather than one.
    const byBlock = new Map<VirtualBlock, Wanted[]>();
    for (const s of sensors) byBlock.set(s.block, [...(byBlock.get(s.block) ?? []), s]);
    const lists = [...byBlock.values()];
    for (let i = 0; this.wanted.length < this.count && lists.some((l) => l.length > i); i++) {
      for (const l of lists) if (l[i] && this.wanted.length < this.count) this.wanted.push(l[i] as Wanted);
    }
  }

  get pending(): number {
    return this.wanted.length;
  }

  /** Tries the devices that are ready (call once a second). */
  async tick(): Promise<void> {
    if (this.busy || this.wanted.length === 0 || this.clock() < this.notBefore) return;
    this.busy = true;
    try {
      const ready = this.wanted.filter((w) => w.block.announced || w.block.acked > 0);
      for (const w of ready) {
        try {
          // A registration is a request with the user token: paced to the server's limit.
          await this.fleet.pacer.take();
          await this.api.setCallback(w.device.guid, this.receiver.urlFor(w.device.guid));
          this.registered.push(w.device.guid);
          this.wanted = this.wanted.filter((x) => x !== w);
        } catch (err) {
          const status = (err as { status?: number }).status ?? 0;
          if (status === 404 && ++w.tries < 30) continue;
          // 429: the user token is rate limited; the rest wait for the server's Retry-After (bounded
          // as the agent's loops bound it), or without one for the next tick.
          if (status === 429) {
            this.metrics.throttled("callback_register");
            this.notBefore = this.clock() + retryAfterOf(err);
            break;
          }
          this.wanted = this.wanted.filter((x) => x !== w);
          this.metrics.error(`callback_register_${status === 0 ? "network" : `http_${status}`}`);
          this.log("error", `callback for ${w.device.guid}: ${(err as Error).message}`);
        }
      }
    } finally {
      this.busy = false;
    }
  }
}
