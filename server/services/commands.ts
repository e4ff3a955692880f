/**
 * Commands to blocks: a durable queue per node and the long-poll waiters. A command is removed only
 * after the response that carries it was written; one not delivered within its TTL expires.
 */
import type { Logger } from "pino";
import type { Command } from "../../protocol/payloads.js";
import type { Bus } from "../bus/types.js";
import type { CommandRow, DeviceRow, Store } from "../store/types.js";
import { HandedOut } from "./handed-out.js";

/**
 * Handles a command for a device that is not on a block (service devices such as the Webhooks or
 * SMS device). Returns true when it took the command; throws to fail it.
 */
export type CommandInterceptor = (device: DeviceRow, da: string) => Promise<boolean>;

export interface CommandHubOptions {
  /** Longest hold of GET /block/:nodeId/commands, ms. Default 30 000. */
  holdMs: number;
  /** A command not delivered within this time expires, ms. Default 60 000. */
  ttlMs: number;
}

/** One held poll. A small class rather than closures: ten thousand of these are held at once. */
class Waiter {
  done = false;
  checking = false;
  /**
   * A wake-up came while the queue was being read: that read may have begun before the command's
   * commit (PostgreSQL, or another instance), so the queue is read once more when it ends.
   */
  again = false;
  /** Its last read of the queue found a command of its node on its way, and handed out nothing. */
  heldBack = false;

  constructor(
    readonly nodeId: string,
    /** performance.now() at which the hold ends: holds run on real elapsed time, TTLs on the clock. */
    readonly deadline: number,
    readonly holdMs: number,
    readonly resolve: (rows: CommandRow[]) => void,
  ) {}
}

/**
 * A command handed straight to a held poll instead of being queued: `settle(true)` once the
 * response carrying it was written, `settle(false)` when it could not be (it is queued then).
 */
interface DirectCommand extends CommandRow {
  settle: (written: boolean) => void;
}

function isDirect(row: CommandRow): row is DirectCommand {
  return typeof (row as Partial<DirectCommand>).settle === "function";
}

/** A direct hand-over whose response never reports back within this time is queued instead, ms. */
const DIRECT_SETTLE_MS = 10_000;

/** Bus channel that carries the node id of every newly queued command. */
export const COMMANDS_CHANNEL = "commands";
/** Granularity of hold expiry, ms. */
const HOLD_SWEEP_MS = 250;

export function toCommand(row: CommandRow): Command {
  return { G: row.g, V: row.v, D: row.d, DA: row.da, GUID: row.guid };
}

export class CommandHub {
  /** node id -> its held poll, in the order the polls began (so, by deadline). */
  private readonly waiters = new Map<string, Waiter>();
  private readonly interceptors: CommandInterceptor[] = [];
  private sweep: NodeJS.Timeout | undefined;
  private holdSweep: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private unsubscribeResync: (() => void) | undefined;
  private stopped = false;
  /** Queued commands handed to a poll whose fate is not known yet (handed-out.ts). */
  private readonly handedOut = new HandedOut();
  readonly stats = { queued: 0, delivered: 0, direct: 0 };

  constructor(
    private readonly store: Store,
    private readonly bus: Bus,
    private readonly log: Logger,
    private readonly options: CommandHubOptions,
    private readonly clock: () => number = Date.now,
  ) {}

  start(): void {
    this.sweep = setInterval(() => {
      this.store.commands.expire(this.clock()).catch((err: unknown) => this.log.warn({ err }, "expiring commands failed"));
    }, 10_000);
    this.sweep.unref();
    // One timer for every held poll: holds end within HOLD_SWEEP_MS after their deadline.
    this.holdSweep = setInterval(() => this.endHolds(), HOLD_SWEEP_MS);
    this.holdSweep.unref();
    // One subscription for every node: the message is the node id.
    this.unsubscribe = this.bus.subscribe(COMMANDS_CHANNEL, (nodeId) => {
      const w = this.waiters.get(nodeId);
      if (w) this.check(w);
    });
    // A networked Bus that reconnected may have missed wake-ups: every held poll reads its queue again.
    this.unsubscribeResync = this.bus.onResync?.(() => {
      for (const w of this.waiters.values()) this.check(w);
    });
  }

  /** Answers every held poll with no commands and refuses new holds. */
  stop(): void {
    this.stopped = true;
    if (this.sweep) clearInterval(this.sweep);
    if (this.holdSweep) clearInterval(this.holdSweep);
    this.unsubscribe?.();
    this.unsubscribeResync?.();
    for (const w of [...this.waiters.values()]) this.finish(w, []);
  }

  addInterceptor(interceptor: CommandInterceptor): void {
    this.interceptors.push(interceptor);
  }

  /**
   * Sends DA to a device: hands it to the interceptor that owns the device, or straight to the
   * node's held poll when one is waiting on an empty queue (no disk write on that path: the caller
   * is answered once the response carrying the command was written), or queues it durably.
   */
  async send(device: DeviceRow, da: string): Promise<void> {
    for (const intercept of this.interceptors) if (await intercept(device, da)) return;
    const now = this.clock();
    const row = {
      id: 0,
      node_id: device.node_id,
      guid: device.guid,
      g: device.g,
      v: device.v,
      d: device.d,
      da,
      created: now,
      expires: now + this.options.ttlMs,
    };
    // Only a waiter that has seen an empty queue (not checking it now), with no queued command on
    // its way to the block, takes a command directly, so a direct command never overtakes a queued one.
    const w = this.waiters.get(device.node_id);
    if (w && !w.done && !w.checking && !this.stopped && !this.handedOut.hasNode(device.node_id)) {
      const written = await new Promise<boolean>((settle) => {
        const timer = setTimeout(() => settle(false), DIRECT_SETTLE_MS);
        const direct: DirectCommand = {
          ...row,
          settle: (ok) => {
            clearTimeout(timer);
            settle(ok);
          },
        };
        this.finish(w, [direct]);
      });
      if (written) {
        this.stats.direct++;
        this.stats.delivered++;
        return;
      }
    }
    const { id: _unused, ...queued } = row;
    await this.store.commands.add(queued);
    this.stats.queued++;
    this.bus.publish(COMMANDS_CHANNEL, device.node_id);
  }

  /**
   * Resolves with the node's queued commands: at once when there are some, otherwise when one
   * arrives or the hold ends (with none). `onAbort` registers a hook for a client that went away.
   * A newer poll for the same node answers the older one with none.
   */
  poll(nodeId: string, onAbort: (cancel: () => void) => void, holdMs = this.options.holdMs): Promise<CommandRow[]> {
    const older = this.waiters.get(nodeId);
    if (older) this.finish(older, []);
    return new Promise<CommandRow[]>((resolve) => {
      const w = new Waiter(nodeId, performance.now() + holdMs, holdMs, resolve);
      this.waiters.set(nodeId, w);
      onAbort(() => this.finish(w, []));
      this.check(w);
    });
  }

  private check(w: Waiter): void {
    if (w.done) return;
    if (w.checking) {
      w.again = true;
      return;
    }
    w.checking = true;
    w.again = false;
    this.store.commands.pending(w.nodeId, this.clock()).then(
      (all) => {
        w.checking = false;
        // A command of the node still on its way to it: nothing goes out before its fate is known
        // (removed, or handed out again first), so the queue's order holds even if its answer is lost.
        w.heldBack = this.handedOut.size > 0 && all.some((r) => this.handedOut.has(r.id));
        const rows = w.heldBack ? [] : all;
        if (rows.length > 0 || this.stopped || w.holdMs === 0) this.finish(w, rows);
        else if (w.again) this.check(w);
      },
      (err: unknown) => {
        w.checking = false;
        if (w.done) return;
        this.finish(w, []);
        this.log.error({ err, nodeId: w.nodeId }, "reading queued commands failed");
      },
    );
  }

  /**
   * A node's held poll reads its queue again (something of it was settled). `heldBackOnly`: only a
   * poll that this could concern, one held back by a command on its way or reading the queue now;
   * a poll that read the queue after the removal committed has nothing new to find.
   */
  private recheck(nodeIds: Iterable<string>, heldBackOnly = false): void {
    for (const nodeId of nodeIds) {
      const w = this.waiters.get(nodeId);
      if (w && (!heldBackOnly || w.heldBack || w.checking)) this.check(w);
    }
  }

  private finish(w: Waiter, rows: CommandRow[]): void {
    if (w.done) return;
    w.done = true;
    for (const r of rows) if (!isDirect(r)) this.handedOut.add(r.id, r.node_id);
    if (this.waiters.get(w.nodeId) === w) this.waiters.delete(w.nodeId);
    w.resolve(rows);
  }

  private endHolds(): void {
    const now = performance.now();
    for (const w of this.waiters.values()) if (w.deadline <= now) this.finish(w, []);
    // Handed-out commands whose route never reported back: free again, and a poll held meanwhile
    // gets them now rather than at the end of its hold.
    const expired = this.handedOut.expire();
    if (expired) this.recheck(expired);
  }

  /** Called once the response carrying these commands was written. */
  async delivered(rows: CommandRow[]): Promise<void> {
    const queued: number[] = [];
    for (const r of rows) {
      if (isDirect(r)) r.settle(true);
      else queued.push(r.id);
    }
    if (queued.length === 0) return;
    try {
      await this.store.commands.remove(queued);
    } catch (err) {
      // Still queued: delivered again (at least once), to a poll held meanwhile too.
      this.release(rows.filter((r) => !isDirect(r)));
      throw err;
    }
    const nodes = new Set<string>();
    for (const id of queued) {
      const nodeId = this.handedOut.settle(id);
      if (nodeId !== undefined) nodes.add(nodeId);
    }
    this.stats.delivered += queued.length;
    // A poll held while these were on their way waited for them: the commands behind them go now.
    this.recheck(nodes, true);
  }

  /** Called when the response carrying these commands could not be written: they stay (or get) queued. */
  lost(rows: CommandRow[]): void {
    for (const r of rows) if (isDirect(r)) r.settle(false);
    this.release(rows.filter((r) => !isDirect(r)));
  }

  /** Queued commands whose answer never went out: free to hand out again, to a poll held meanwhile too. */
  private release(rows: CommandRow[]): void {
    if (rows.length === 0) return;
    for (const r of rows) this.handedOut.settle(r.id);
    this.recheck(new Set(rows.map((r) => r.node_id)));
  }

  get heldPolls(): number {
    return this.waiters.size;
  }
}
