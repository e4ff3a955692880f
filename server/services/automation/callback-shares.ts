/**
 * The callback dispatcher's queues and each user's share of them (callbacks.ts): one queue per
 * device (order kept), bounded per device, per user and in total, and at most `maxInFlightPerUser`
 * attempts in flight per user, waiting first come first served for a slot. Bookkeeping only: what
 * runs the queues is the dispatcher's. The queues hold the deliveries leased from the store's
 * outbox (the head of each device's queue there); the bounds of what waits apply to the outbox.
 */
import type { Delivery } from "./callback-sender.js";

export interface Item extends Delivery {
  /** Its row in the store's outbox, leased here. */
  row: number;
}

export interface DeviceQueue {
  userId: number;
  items: Item[];
  running: boolean;
}

interface UserShare {
  queued: number;
  inFlight: number;
  /** Device loops waiting for one of the user's attempt slots, first come first served. */
  waiting: (() => void)[];
}

/**
 * Why a delivery was dropped (`blockkit_callback_drops_total{reason}`): `outbound_refused`, the
 * outbound policy refused every address of its URL (not retried).
 */
export type DropReason = "queue_full" | "user_queue_full" | "device_queue_full" | "gave_up" | "outbound_refused";

export interface ShareBounds {
  maxInFlightPerUser: number;
  /**
   * Deliveries of one user leased here at most (waiting for a slot or in flight): a few times the
   * slots, so that a slot freed starts the user's next delivery at once, not after a claim.
   */
  maxLeasedPerUser: number;
}

export class CallbackShares {
  readonly queues = new Map<number, DeviceQueue>();
  private readonly users = new Map<number, UserShare>();
  /** Deliveries waiting or in flight in every queue together. */
  queued = 0;

  constructor(readonly bounds: ShareBounds) {}

  /** Nothing to start: the shares are made as deliveries arrive. */
  start(): void {}

  /** Forgets every queue and wakes every loop waiting for a slot. */
  stop(): void {
    this.queues.clear();
    for (const u of this.users.values()) for (const w of u.waiting.splice(0)) w();
    this.users.clear();
    this.queued = 0;
  }

  /** Adds a delivery to its device's queue; returns the queue when no loop runs it yet. */
  add(deviceId: number, userId: number, item: Item): DeviceQueue | null {
    let q = this.queues.get(deviceId);
    if (!q) this.queues.set(deviceId, (q = { userId, items: [], running: false }));
    q.items.push(item);
    this.queued++;
    this.share(userId).queued++;
    return q.running ? null : q;
  }

  /** Users with as many deliveries leased here as they may have (the outbox leases none more for them). */
  busy(): number[] {
    return [...this.users].filter(([, u]) => u.queued >= this.bounds.maxLeasedPerUser).map(([id]) => id);
  }

  /** Outbox rows leased here (waiting for a slot or in flight). */
  held(): number[] {
    return [...this.queues.values()].flatMap((q) => q.items.map((i) => i.row));
  }

  /** `n` deliveries of `q` leave the queues (delivered, given up, or the callback is gone). */
  removed(q: DeviceQueue, n: number): void {
    this.queued -= n;
    const u = this.users.get(q.userId);
    if (!u) return;
    u.queued -= n;
    if (u.queued <= 0 && u.inFlight === 0 && u.waiting.length === 0) this.users.delete(q.userId);
  }

  /** Waits for one of the user's attempt slots. */
  async acquire(userId: number): Promise<void> {
    const u = this.share(userId);
    if (u.inFlight < this.bounds.maxInFlightPerUser) {
      u.inFlight++;
      return;
    }
    await new Promise<void>((resolve) => u.waiting.push(resolve));
    u.inFlight++;
  }

  release(userId: number): void {
    const u = this.users.get(userId);
    if (!u) return;
    u.inFlight--;
    u.waiting.shift()?.();
  }

  private share(userId: number): UserShare {
    let u = this.users.get(userId);
    if (!u) this.users.set(userId, (u = { queued: 0, inFlight: 0, waiting: [] }));
    return u;
  }
}
