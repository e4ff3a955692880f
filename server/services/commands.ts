/**
 * Commands to blocks: a durable queue per node and the long-poll waiters. A command is removed only
 * after the response that carries it was written; one not delivered within its TTL expires.
 */
import type { Logger } from "pino";
import type { Command } from "../../protocol/payloads.js";
import type { Bus } from "../bus/types.js";
import { badRequest } from "../errors.js";
import type { CommandRow, DeviceRow, Store } from "../store/types.js";

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

interface Waiter {
  finish(rows: CommandRow[]): void;
}

export function toCommand(row: CommandRow): Command {
  return { G: row.g, V: row.v, D: row.d, DA: row.da, GUID: row.guid };
}

export class CommandHub {
  private readonly waiters = new Map<string, Waiter>();
  private readonly interceptors: CommandInterceptor[] = [];
  private sweep: NodeJS.Timeout | undefined;
  private stopped = false;
  readonly stats = { queued: 0, delivered: 0 };

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
  }

  /** Answers every held poll with no commands and refuses new holds. */
  stop(): void {
    this.stopped = true;
    if (this.sweep) clearInterval(this.sweep);
    for (const w of [...this.waiters.values()]) w.finish([]);
  }

  addInterceptor(interceptor: CommandInterceptor): void {
    this.interceptors.push(interceptor);
  }

  /** Queues DA for a device (or hands it to the interceptor that owns the device). */
  async send(device: DeviceRow, da: string): Promise<void> {
    for (const intercept of this.interceptors) if (await intercept(device, da)) return;
    const now = this.clock();
    await this.store.commands.add({
      node_id: device.node_id,
      guid: device.guid,
      g: device.g,
      v: device.v,
      d: device.d,
      da,
      created: now,
      expires: now + this.options.ttlMs,
    });
    this.stats.queued++;
    this.bus.publish(`cmd:${device.node_id}`, "");
  }

  /**
   * Resolves with the node's queued commands: at once when there are some, otherwise when one
   * arrives or the hold ends (with none). `onAbort` registers a hook for a client that went away.
   * A newer poll for the same node answers the older one with none.
   */
  async poll(nodeId: string, holdMs: number, onAbort: (cancel: () => void) => void): Promise<CommandRow[]> {
    if (holdMs < 0) throw badRequest("hold must not be negative");
    this.waiters.get(nodeId)?.finish([]);
    return new Promise<CommandRow[]>((resolve, reject) => {
      let done = false;
      let checking = false;
      const waiter: Waiter = {
        finish: (rows) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          unsubscribe();
          if (this.waiters.get(nodeId) === waiter) this.waiters.delete(nodeId);
          resolve(rows);
        },
      };
      const check = (): void => {
        if (done || checking) return;
        checking = true;
        this.store.commands.pending(nodeId, this.clock()).then(
          (rows) => {
            checking = false;
            if (rows.length > 0 || this.stopped || holdMs === 0) waiter.finish(rows);
          },
          (err: unknown) => {
            checking = false;
            if (done) return;
            done = true;
            clearTimeout(timer);
            unsubscribe();
            if (this.waiters.get(nodeId) === waiter) this.waiters.delete(nodeId);
            reject(err);
          },
        );
      };
      // Subscribe before the first look at the queue so that no command slips between the two.
      const unsubscribe = this.bus.subscribe(`cmd:${nodeId}`, check);
      this.waiters.set(nodeId, waiter);
      const timer = setTimeout(() => waiter.finish([]), holdMs);
      onAbort(() => waiter.finish([]));
      check();
    });
  }

  /** Called once the response carrying these commands was written. */
  async delivered(rows: CommandRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.store.commands.remove(rows.map((r) => r.id));
    this.stats.delivered += rows.length;
  }

  get heldPolls(): number {
    return this.waiters.size;
  }
}
