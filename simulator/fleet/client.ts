/**
 * The simulated block's HTTP client: the real BlockClient with two additions. Every failed call is
 * counted by kind (`uplink_http_503`, `poll_network`, …), and a chaos "drop" cuts the block's
 * connection: the calls in flight are aborted and new ones fail as a dead network would, until the
 * link comes back. The agent above it sees exactly what a Raspberry Pi on a bad line sees.
 */
import { BlockClient, BlockClientError, type BlockClientOptions } from "../../protocol/block-client.js";
import type { Command } from "../../protocol/payloads.js";
import { type BlockTransport, type TransportCallbacks, type TransportRequest, type TransportResponse, dispatchTo } from "../../protocol/transport.js";

export type CallKind = "activate" | "uplink" | "poll" | "snapshot";

export interface ClientHooks {
  /** A call failed for a reason other than the agent stopping or a chaos drop. */
  error(kind: string): void;
  /** A call the agent asks again after a wait was answered 429 (backpressure, not an error). */
  throttled(kind: CallKind): void;
}

/**
 * The block's side of the wire: every exchange passes here, so a drop cuts them all and every
 * failure is counted once. (It wraps the transport rather than each BlockClient method: a closure
 * and an async frame per call cost measurable CPU at ten thousand calls a second.)
 */
class SimLink implements BlockTransport {
  cut = false;
  /**
   * One controller per caller's signal (the agent's loops keep one signal each for their life): it
   * aborts when that signal does, or on a drop.
   */
  private readonly links = new Map<AbortSignal | undefined, AbortController>();
  /** The signal of the last call and its controller (null once that controller left `links`). */
  private lastSignal: AbortSignal | undefined;
  private lastLink: AbortController | null = null;
  /** The handlers of the uplink's calls on the current link. */
  private uplinkCalls: Handlers | null = null;
  /** The counting callbacks of the last dispatch() (one caller's, on one link, for one kind). */
  private counting: Counting | null = null;

  constructor(
    private readonly inner: BlockTransport,
    private readonly hooks: ClientHooks,
  ) {}

  send(r: TransportRequest): Promise<TransportResponse> {
    const kind = kindOf(r.url);
    if (this.cut) return Promise.reject(new Error(`${kind}: connection dropped (chaos)`));
    // A drop while the call is in flight aborts it, as a pulled cable would.
    const signal = this.link(r.signal).signal;
    // The request is the client's, made for this call: it takes the link's signal in place.
    r.signal = signal;
    // The uplink's calls (one a reading) share one pair of handlers per link, not two closures each.
    let h = kind === "uplink" ? this.uplinkCalls : null;
    if (h === null || h.signal !== signal) {
      h = this.handlers(kind, signal);
      if (kind === "uplink") this.uplinkCalls = h;
    }
    return this.inner.send(r).then(h.ok, h.failed);
  }

  /** send() without a promise (BlockTransport.dispatch): counted the same way. */
  dispatch(r: TransportRequest, cb: TransportCallbacks): void {
    if (this.cut) {
      const kind = kindOf(r.url);
      queueMicrotask(() => cb.failed(new Error(`${kind}: connection dropped (chaos)`)));
      return;
    }
    const signal = this.link(r.signal).signal;
    r.signal = signal;
    // The same caller's next call: the same URL string (the client makes each once), link and callbacks.
    let c = this.counting;
    if (c === null || c.url !== r.url || c.cb !== cb || c.signal !== signal) c = this.counting = new Counting(r.url, kindOf(r.url), signal, cb, this.hooks);
    dispatchTo(this.inner, r, c);
  }

  /** What a call's answer or failure counts: a non-2xx answer, or a failure the link did not cause. */
  private handlers(kind: CallKind, signal: AbortSignal): Handlers {
    return {
      signal,
      ok: (res) => {
        countAnswer(this.hooks, kind, res);
        return res;
      },
      failed: (err) => {
        countFailure(this.hooks, kind, signal);
        throw err;
      },
    };
  }

  drop(): void {
    this.cut = true;
    this.lastLink = null;
    const links = [...this.links.values()];
    this.links.clear();
    for (const c of links) c.abort(new Error("connection dropped (chaos)"));
  }

  async close(): Promise<void> {
    // The transport belongs to the fleet.
  }

  /** The controller of calls made with `signal`: aborted by it or by a drop. */
  private link(signal: AbortSignal | undefined): AbortController {
    // Most calls come from the uplink, again and again with its one signal: no map lookup then.
    if (this.lastLink !== null && signal === this.lastSignal) return this.lastLink;
    const known = this.links.get(signal);
    if (known) {
      this.lastSignal = signal;
      this.lastLink = known;
      return known;
    }
    const mine = new AbortController();
    if (signal?.aborted) {
      mine.abort(signal.reason);
      return mine;
    }
    this.links.set(signal, mine);
    this.lastSignal = signal;
    this.lastLink = mine;
    // A listener rather than AbortSignal.any(): on Node 20 every any() signal stays referenced by
    // the caller's long-lived signal until collected.
    signal?.addEventListener(
      "abort",
      () => {
        if (this.links.get(signal) === mine) this.links.delete(signal);
        if (this.lastLink === mine) this.lastLink = null;
        mine.abort(signal.reason);
      },
      { once: true },
    );
    return mine;
  }
}

/** dispatch()'s outcome, counted as send()'s handlers count it, then handed to the caller's callbacks. */
class Counting implements TransportCallbacks {
  constructor(
    readonly url: string,
    readonly kind: CallKind,
    readonly signal: AbortSignal,
    readonly cb: TransportCallbacks,
    private readonly hooks: ClientHooks,
  ) {}

  answered(res: TransportResponse): void {
    countAnswer(this.hooks, this.kind, res);
    this.cb.answered(res);
  }

  failed(err: Error): void {
    countFailure(this.hooks, this.kind, this.signal);
    this.cb.failed(err);
  }
}

/** A non-2xx answer is an error, or throttling for a call that is asked again. */
function countAnswer(hooks: ClientHooks, kind: CallKind, res: TransportResponse): void {
  if (res.status >= 200 && res.status < 300) return;
  // A snapshot upload is not sent again: a refused one is lost, an error even when throttled.
  if (res.status === 429 && kind !== "snapshot") hooks.throttled(kind);
  else hooks.error(`${kind}_http_${res.status}`);
}

/** A failure is an error unless the link's own abort (a stop, a drop) caused it. */
function countFailure(hooks: ClientHooks, kind: CallKind, signal: AbortSignal): void {
  if (!signal.aborted) hooks.error(`${kind}_network`);
}

interface Handlers {
  signal: AbortSignal;
  ok(res: TransportResponse): TransportResponse;
  failed(err: unknown): never;
}

function kindOf(url: string): CallKind {
  if (url.endsWith("/data")) return "uplink";
  if (url.endsWith("/commands")) return "poll";
  if (url.endsWith("/snapshot")) return "snapshot";
  if (url.includes("/activate")) return "activate";
  return "uplink";
}

export class SimBlockClient extends BlockClient {
  private readonly link: SimLink;
  private readonly hooks: ClientHooks;

  constructor(options: BlockClientOptions & { transport: BlockTransport }, hooks: ClientHooks) {
    const link = new SimLink(options.transport, hooks);
    super({ ...options, dispatcher: undefined, transport: link });
    this.link = link;
    this.hooks = hooks;
  }

  /** Drops the connection: calls in flight fail now, new ones fail until restore(). */
  drop(): void {
    this.link.drop();
  }

  restore(): void {
    this.link.cut = false;
  }

  get dropped(): boolean {
    return this.link.cut;
  }

  // A complete answer the client cannot use (no token, no DEVICE array) is an error the link did not see.
  override activate(opts: { userToken?: string; signal?: AbortSignal } = {}): Promise<string | null> {
    return super.activate(opts).catch((err: unknown) => this.malformed("activate", err));
  }

  override commands(token: string, signal?: AbortSignal): Promise<Command[]> {
    return super.commands(token, signal).catch((err: unknown) => this.malformed("poll", err));
  }

  // An upload that never reached the wire (no stream root) is a failure the link did not see either.
  override snapshot(token: string, guid: string, image: Uint8Array, signal?: AbortSignal): Promise<void> {
    return super.snapshot(token, guid, image, signal).catch((err: unknown) => {
      if (err instanceof BlockClientError && err.status === 0 && /no stream_url/.test(err.message)) this.hooks.error("snapshot_no_stream");
      return this.malformed("snapshot", err);
    });
  }

  private malformed(kind: CallKind, err: unknown): never {
    if (err instanceof BlockClientError && err.status >= 200 && err.status < 300) this.hooks.error(`${kind}_http_${err.status}`);
    throw err;
  }
}
