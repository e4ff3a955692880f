/**
 * The block transport over an undici dispatcher: the simulator shares one dispatcher among
 * thousands of simulated blocks for their held calls (see simulator/fleet/transport.ts). BlockClient imports this
 * module only when it is given a dispatcher, so that the gateway never loads undici.
 *
 * It calls `dispatcher.dispatch()` with a small handler of its own rather than undici's
 * `request()`: a block call wants the status and the whole (small) body, and `request()` builds a
 * stream, a header object and an abort wiring per call, which at ten thousand calls a second was
 * a third of the simulator's CPU with the garbage it leaves. The answer's headers are parsed only
 * when someone reads them.
 *
 * Aborts: one listener per signal for all the exchanges made with it (abort-watch.ts).
 */
import { type Dispatcher, util } from "undici";
import { AbortWatch, type WatchList, type WatchedCall, abortReason } from "./abort-watch.js";
import type { BlockTransport, TransportRequest, TransportResponse } from "./transport.js";

export class UndiciTransport implements BlockTransport {
  /** The dispatcher belongs to the caller: close() leaves it open. */
  constructor(private readonly dispatcher: Dispatcher) {
    if (!dispatcher || typeof dispatcher.dispatch !== "function") throw new TypeError("UndiciTransport: dispatcher must be an undici Dispatcher");
  }

  send(r: TransportRequest): Promise<TransportResponse> {
    return new Promise<TransportResponse>((resolve, reject) => {
      if (r.signal?.aborted) return reject(abortReason(r.signal));
      // origin and path without a URL object: "http://host:port" + "/rest/v0/…".
      const slashes = r.url.indexOf("//");
      const cut = slashes < 0 ? -1 : r.url.indexOf("/", slashes + 2);
      if (slashes < 0 || !(r.url.startsWith("http:") || r.url.startsWith("https:")) || r.url.indexOf(":") !== slashes - 1) {
        return reject(new TypeError(`not an http(s) URL: ${r.url}`));
      }
      const origin = cut < 0 ? r.url : r.url.slice(0, cut);
      const path = cut < 0 ? "/" : r.url.slice(cut);
      const exchange = new Exchange(r.signal, r.maxBytes ?? Infinity, resolve, reject);
      this.dispatcher.dispatch(
        { origin, path, method: r.method, headers: r.headers, body: r.body, headersTimeout: r.timeoutMs, bodyTimeout: r.timeoutMs },
        exchange,
      );
    });
  }

  async close(): Promise<void> {
    // Nothing of its own to close.
  }
}

/** The exchanges in flight per signal (one abort listener per signal). */
const inFlight = new AbortWatch<Exchange>((x, reason) => x.aborted(reason));

/** One exchange: undici's dispatch handler (raw headers, body chunks), aborted with its signal. */
class Exchange implements Dispatcher.DispatchHandler, WatchedCall {
  watchPrev: WatchedCall | null = null;
  watchNext: WatchedCall | null = null;
  private abortFn: ((err?: Error) => void) | null = null;
  private settled = false;
  private status = 0;
  private rawHeaders: Buffer[] | string[] | null = null;
  private chunks: Buffer[] = [];
  private size = 0;
  /** Its entry among its signal's calls in flight (AbortWatch.add's handle). */
  private watch: WatchList | null = null;

  constructor(
    signal: AbortSignal | undefined,
    private readonly max: number,
    private readonly resolve: (r: TransportResponse) => void,
    private readonly reject: (e: Error) => void,
  ) {
    // send() checked the signal: add() finds it not aborted.
    if (signal) this.watch = inFlight.add(signal, this);
  }

  /** The signal aborted. */
  aborted(err: Error): void {
    this.abortFn?.(err);
    this.fail(err);
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abortFn = abort;
    if (this.settled) abort(new Error("the exchange already ended"));
  }

  onHeaders(status: number, rawHeaders: Buffer[] | string[]): boolean {
    if (this.settled) return false;
    this.status = status;
    this.rawHeaders = rawHeaders;
    if (this.max !== Infinity) {
      for (let i = 0; i < rawHeaders.length; i += 2) {
        if (String(rawHeaders[i]).toLowerCase() !== "content-length") continue;
        const declared = Number(String(rawHeaders[i + 1]));
        if (declared > this.max) this.abortWith(new Error(`the answer of ${declared} bytes is over the limit of ${this.max} bytes`));
      }
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.settled) return false;
    this.size += chunk.length;
    if (this.size > this.max) this.abortWith(new Error(`the answer is over the limit of ${this.max} bytes`));
    else this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    if (this.settled) return;
    this.settle();
    const raw = this.rawHeaders ?? [];
    let headers: TransportResponse["headers"] | undefined;
    const body = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.size);
    this.resolve({
      status: this.status,
      body,
      get headers() {
        headers ??= util.parseHeaders(raw) as TransportResponse["headers"];
        return headers;
      },
    });
  }

  onError(err: Error): void {
    this.fail(err);
  }

  private abortWith(err: Error): void {
    this.abortFn?.(err);
    this.fail(err);
  }

  private fail(err: Error): void {
    if (this.settled) return;
    this.settle();
    this.reject(err);
  }

  private settle(): void {
    this.settled = true;
    if (this.watch) inFlight.delete(this.watch, this);
  }
}
