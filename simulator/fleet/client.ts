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
  private readonly inflight = new Set<AbortController>();

  constructor(
    options: BlockClientOptions,
    private readonly hooks: ClientHooks,
  ) {
    super(options);
  }

  /** Drops the connection: calls in flight fail now, new ones fail until restore(). */
  drop(): void {
    this.cut = true;
    for (const c of this.inflight) c.abort(new Error("connection dropped (chaos)"));
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

  private async guard<T>(kind: CallKind, signal: AbortSignal | undefined, call: (signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
    if (this.cut) throw new BlockClientError(`${kind}: connection dropped (chaos)`, 0);
    // A drop while the call is in flight aborts it, as a pulled cable would.
    const mine = new AbortController();
    this.inflight.add(mine);
    // A listener rather than AbortSignal.any(): on Node 20 every any() signal stays referenced by
    // the agent's long-lived signal until collected, which costs GC time at ten thousand blocks.
    const forward = (): void => mine.abort(signal?.reason);
    if (signal?.aborted) mine.abort(signal.reason);
    else signal?.addEventListener("abort", forward, { once: true });
    try {
      return await call(mine.signal);
    } catch (err) {
      if (!mine.signal.aborted) {
        const status = err instanceof BlockClientError ? err.status : 0;
        this.hooks.error(`${kind}_${status === 0 ? "network" : `http_${status}`}`);
      }
      throw err;
    } finally {
      signal?.removeEventListener("abort", forward);
      this.inflight.delete(mine);
    }
  }
}
