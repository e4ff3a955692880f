/** One call of the HTTP/1.1 client: its request bytes, its outcome, and where it is. */
import { AbortWatch, type WatchList, type WatchedCall } from "../../protocol/abort-watch.js";
import type { TransportCallbacks, TransportRequest, TransportResponse } from "../../protocol/transport.js";
import { headerRecord } from "./response-parser.js";

/** What an exchange needs of the connection carrying it. */
export interface Carrier {
  /** An exchange on it was aborted. */
  abandoned(): void;
}

/** The exchanges waiting or in flight per signal (one abort listener per signal). */
const watched = new AbortWatch<Exchange>((x, reason) => x.abort(reason));

const LINE_BREAK = /[\r\n]/;

/**
 * The header lines of a headers object, checked once per object: a block client passes the same
 * object for every call with the same token (BlockClient caches them), so the lines are written
 * and checked once per block, not once per reading.
 */
const serialised = new WeakMap<Record<string, string>, string>();

function fieldLines(headers: Record<string, string>): string {
  let lines = serialised.get(headers);
  if (lines !== undefined) return lines;
  lines = "";
  for (const name in headers) {
    const value = headers[name] as string;
    if (LINE_BREAK.test(name) || LINE_BREAK.test(value)) throw new TypeError(`header ${JSON.stringify(name)} holds a line break`);
    lines += `${name}: ${value}\r\n`;
  }
  serialised.set(headers, lines);
  return lines;
}

/**
 * A request's head up to its body's length: the request line, host and the header lines. Throws a
 * TypeError for a header name or value with a line break (request smuggling).
 */
export function requestHead(method: string, path: string, host: string, headers: Record<string, string>): string {
  return `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n${fieldLines(headers)}`;
}

export class Exchange implements WatchedCall {
  watchPrev: WatchedCall | null = null;
  watchNext: WatchedCall | null = null;
  /** The connection carrying it; null while queued. */
  conn: Carrier | null = null;
  settled = false;
  /** Sent once more after a stale kept-alive connection failed it. */
  retried = false;
  /** When the answer (or its next bytes) must have arrived, performance.now() ms. */
  deadline = 0;
  readonly head: string;
  readonly body: string | Uint8Array | undefined;
  readonly timeoutMs: number;
  readonly max: number;
  /** May be sent twice (a GET, or a body with an idempotency KEY); a snapshot upload may not. */
  readonly retryable: boolean;
  readonly signal: AbortSignal | undefined;
  /** Its entry among its signal's exchanges (AbortWatch.add's handle); null without a signal. */
  private watch: WatchList | null = null;

  /**
   * `head`: requestHead()'s for the request. Check `abortedAtStart` after: the request's signal had
   * aborted, and the exchange must not go out.
   */
  constructor(
    r: TransportRequest,
    head: string,
    private readonly cb: TransportCallbacks,
  ) {
    this.head = r.body === undefined ? `${head}\r\n` : `${head}content-length: ${typeof r.body === "string" ? Buffer.byteLength(r.body) : r.body.byteLength}\r\n\r\n`;
    this.body = r.body;
    this.timeoutMs = r.timeoutMs;
    this.max = r.maxBytes ?? Infinity;
    this.retryable = r.idempotent ?? r.method === "GET";
    this.signal = r.signal;
    if (r.signal) this.watch = watched.add(r.signal, this);
  }

  /** Its signal had aborted before it was made (nothing watches it; it must not go out). */
  get abortedAtStart(): boolean {
    return this.watch === null && this.signal !== undefined;
  }

  /**
   * The callbacks run in the connection's turn (a promise's, in a reaction after it). One that
   * throws must not break the connection's reading: its error is thrown again on its own, as an
   * uncaught exception (a promise's reaction would have left an unhandled rejection).
   */
  resolve(res: TransportResponse): void {
    if (!this.settle()) return;
    try {
      this.cb.answered(res);
    } catch (err) {
      rethrow(err);
    }
  }

  reject(err: Error): void {
    if (!this.settle()) return;
    try {
      this.cb.failed(err);
    } catch (e) {
      rethrow(e);
    }
  }

  /** Its signal aborted (or the block's link dropped): failed on a microtask, not inside abort(). */
  abort(err: Error): void {
    if (!this.settle()) return;
    const cb = this.cb;
    queueMicrotask(() => cb.failed(err));
    // Its answer, if one comes, is read and dropped; a connection carrying nothing else goes now.
    this.conn?.abandoned();
  }

  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    if (this.watch !== null) watched.delete(this.watch, this);
    return true;
  }
}

function rethrow(err: unknown): void {
  queueMicrotask(() => {
    throw err;
  });
}

/** A complete answer; its header fields are split from the head's text when first read. */
export class Answer implements TransportResponse {
  private parsed: Record<string, string | string[] | undefined> | undefined;

  constructor(
    readonly status: number,
    private readonly head: string,
    readonly body: Buffer,
  ) {}

  get headers(): Record<string, string | string[] | undefined> {
    this.parsed ??= headerRecord(this.head);
    return this.parsed;
  }
}
