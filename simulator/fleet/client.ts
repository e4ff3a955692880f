/**
 * The simulated block's HTTP client: the real BlockClient with two additions. Every failed call is
 * counted by kind (`uplink_http_503`, `poll_network`, …), and a chaos "drop" cuts the block's
 * connection: the calls in flight are aborted and new ones fail as a dead network would, until the
 * link comes back. The agent above it sees exactly what a Raspberry Pi on a bad line sees.
 */
import { BlockClient, BlockClientError, type BlockClientOptions, type WireConfig, type WireReading } from "../../protocol/block-client.js";
import type { Command } from "../../protocol/payloads.js";

export type CallKind = "activate" | "uplink" | "poll" | "snapshot";

export interface ClientHooks {
  /** A call failed for a reason other than the agent stopping or a chaos drop. */
  error(kind: string): void;
}

export class SimBlockClient extends BlockClient {
  private cut = false;
  /**
   * One controller per caller's signal (the agent's loops keep one signal each for their life): it
   * aborts when that signal does, or on a drop. A controller per call, with a listener on the
   * caller's signal, cost about a tenth of the simulator's CPU at ten thousand calls a second.
   */
  private readonly links = new Map<AbortSignal | undefined, AbortController>();

  constructor(
    options: BlockClientOptions,
    private readonly hooks: ClientHooks,
  ) {
    super(options);
  }

  /** Drops the connection: calls in flight fail now, new ones fail until restore(). */
  drop(): void {
    this.cut = true;
    const links = [...this.links.values()];
    this.links.clear();
    for (const c of links) c.abort(new Error("connection dropped (chaos)"));
  }

  restore(): void {
    this.cut = false;
  }

  get dropped(): boolean {
    return this.cut;
  }

  override activate(opts: { userToken?: string; signal?: AbortSignal } = {}): Promise<string | null> {
    return this.guard("activate", opts.signal, (signal) => super.activate({ ...opts, signal }));
  }

  override heartbeat(token: string, readings: WireReading[], signal?: AbortSignal): Promise<void> {
    return this.guard("uplink", signal, (s) => super.heartbeat(token, readings, s));
  }

  override data(token: string, reading: WireReading, signal?: AbortSignal): Promise<void> {
    return this.guard("uplink", signal, (s) => super.data(token, reading, s));
  }

  override config(token: string, event: WireConfig, signal?: AbortSignal): Promise<void> {
    return this.guard("uplink", signal, (s) => super.config(token, event, s));
  }

  override commands(token: string, signal?: AbortSignal): Promise<Command[]> {
    return this.guard("poll", signal, (s) => super.commands(token, s));
  }

  override snapshot(token: string, guid: string, image: Uint8Array, signal?: AbortSignal): Promise<void> {
    return this.guard("snapshot", signal, (s) => super.snapshot(token, guid, image, s));
  }

  /** The controller of calls made with `signal`: aborted by it or by a drop. */
  private link(signal: AbortSignal | undefined): AbortController {
    const known = this.links.get(signal);
    if (known) return known;
    const mine = new AbortController();
    if (signal?.aborted) {
      mine.abort(signal.reason);
      return mine;
    }
    this.links.set(signal, mine);
    // A listener rather than AbortSignal.any(): on Node 20 every any() signal stays referenced by
    // the caller's long-lived signal until collected.
    signal?.addEventListener(
      "abort",
      () => {
        if (this.links.get(signal) === mine) this.links.delete(signal);
        mine.abort(signal.reason);
      },
      { once: true },
    );
    return mine;
  }

  private async guard<T>(kind: CallKind, signal: AbortSignal | undefined, call: (signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
    if (this.cut) throw new BlockClientError(`${kind}: connection dropped (chaos)`, 0);
    // A drop while the call is in flight aborts it, as a pulled cable would.
    const mine = this.link(signal).signal;
    try {
      return await call(mine);
    } catch (err) {
      if (!mine.aborted) {
        const status = err instanceof BlockClientError ? err.status : 0;
        this.hooks.error(`${kind}_${status === 0 ? "network" : `http_${status}`}`);
      }
      throw err;
    }
  }
}
