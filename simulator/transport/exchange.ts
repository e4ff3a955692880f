/** One call of the HTTP/1.1 client: its request bytes, its outcome, and where it is. */
import { AbortWatch } from "../../protocol/abort-watch.js";
import type { TransportRequest, TransportResponse } from "../../protocol/transport.js";
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

export class Exchange {
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

  /** Throws a TypeError for a header name or value with a line break (request smuggling). */
  constructor(
    r: TransportRequest,
    path: string,
    host: string,
    private readonly resolveFn: (res: TransportResponse) => void,
    private readonly rejectFn: (err: Error) => void,
  ) {
    let head = `${r.method} ${path} HTTP/1.1\r\nhost: ${host}\r\n${fieldLines(r.headers)}`;
    if (r.body !== undefined) head += `content-length: ${typeof r.body === "string" ? Buffer.byteLength(r.body) : r.body.byteLength}\r\n`;
    this.head = `${head}\r\n`;
    this.body = r.body;
    this.timeoutMs = r.timeoutMs;
    this.max = r.maxBytes ?? Infinity;
    this.retryable = r.idempotent ?? r.method === "GET";
    this.signal = r.signal;
    if (r.signal) watched.add(r.signal, this);
  }

  resolve(res: TransportResponse): void {
    if (this.settle()) this.resolveFn(res);
  }

  reject(err: Error): void {
    if (this.settle()) this.rejectFn(err);
  }

  abort(err: Error): void {
    if (this.settled) return;
    this.reject(err);
    // Its answer, if one comes, is read and dropped; a connection carrying nothing else goes now.
    this.conn?.abandoned();
  }

  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    if (this.signal) watched.delete(this.signal, this);
    return true;
  }
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
