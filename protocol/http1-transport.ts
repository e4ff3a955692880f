/**
 * A lean HTTP/1.1 client over node:net, for many short calls a second to one plain-http origin:
 * the simulator's readings. Each connection carries one exchange at a time (no pipelining) and is
 * kept open between them; a call that finds every connection busy waits in a FIFO queue.
 *
 * Why not undici: at ten thousand readings a second, undici's dispatch path (its request object,
 * the WebAssembly llhttp parser with a callback per header, its handler wrapping and timers) cost
 * about 58 µs of CPU per exchange on CI's machine, two thirds of the simulator's whole cost per
 * event. A block call needs much less: one request written as a single string, and an answer with
 * a status line, a few headers, and a small body framed by Content-Length (or chunked, or ended by
 * the server closing). This client does only that, with one object per exchange and no timer per
 * exchange (one sweep per transport checks the deadlines).
 *
 * It speaks http: only; an https: URL is refused with a TypeError (the fleet sends those through
 * undici instead, see simulator/fleet/transport.ts). Headers of the answer are parsed only when
 * someone reads them. A kept-alive connection that the server closed just as a request went out
 * (nothing of the answer arrived) gets the request sent once more on a fresh connection, as Node's
 * agent advises: block calls are safe to repeat, readings carry an idempotency KEY.
 */
import { type Socket, connect } from "node:net";
import { AbortWatch, abortReason } from "./abort-watch.js";
import { TimeoutError, type BlockTransport, type TransportRequest, type TransportResponse } from "./transport.js";

export interface Http1TransportOptions {
  /** Most connections open to one origin. Default 128. */
  connections?: number;
  /**
   * Exchanges in flight on one connection at most, once every connection is busy (HTTP/1.1
   * pipelining; the writes of one tick on a connection leave together). Default 1: none.
   */
  pipelining?: number;
  /** Most calls waiting for a connection; beyond it a call fails at once. Default 100 000. */
  maxQueue?: number;
  /** How long an idle connection stays open, ms (shortened by the server's Keep-Alive hint). Default 60 000. */
  idleTimeoutMs?: number;
}

const CRLF_CRLF = Buffer.from("\r\n\r\n");
/** How often deadlines and idle connections are checked, ms. */
const SWEEP_MS = 100;

export class Http1Transport implements BlockTransport {
  private readonly origins = new Map<string, Origin>();
  private readonly connections: number;
  private readonly pipelining: number;
  private readonly maxQueue: number;
  private readonly idleTimeoutMs: number;
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(o: Http1TransportOptions = {}) {
    for (const name of ["connections", "pipelining", "maxQueue", "idleTimeoutMs"] as const) {
      const v = o[name];
      if (v !== undefined && !(Number.isInteger(v) && v > 0)) throw new TypeError(`Http1Transport: ${name} must be a positive integer, got ${String(v)}`);
    }
    this.connections = o.connections ?? 128;
    this.pipelining = o.pipelining ?? 1;
    this.maxQueue = o.maxQueue ?? 100_000;
    this.idleTimeoutMs = o.idleTimeoutMs ?? 60_000;
  }

  send(r: TransportRequest): Promise<TransportResponse> {
    return new Promise<TransportResponse>((resolve, reject) => {
      if (r.signal?.aborted) return reject(abortReason(r.signal));
      if (this.closed) return reject(new Error("the transport is closed"));
      if (!r.url.startsWith("http://")) return reject(new TypeError(`Http1Transport speaks plain http only, not ${r.url}`));
      const cut = r.url.indexOf("/", 7);
      const origin = cut < 0 ? r.url : r.url.slice(0, cut);
      let pool = this.origins.get(origin);
      if (!pool) {
        try {
          pool = new Origin(origin, this.connections, this.pipelining, this.maxQueue, this.idleTimeoutMs);
        } catch (err) {
          return reject(err as Error);
        }
        this.origins.set(origin, pool);
        this.sweeper ??= setInterval(() => this.sweep(), SWEEP_MS).unref();
      }
      const x = new Exchange(r, cut < 0 ? "/" : r.url.slice(cut), pool.hostHeader, resolve, reject);
      pool.submit(x);
    });
  }

  /** Refuses new calls, lets those in flight or waiting finish, and closes the connections. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.origins.values()].map((pool) => pool.drain()));
    this.destroy();
  }

  /** Fails every call in flight or waiting and closes the connections now. */
  destroy(): void {
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    const err = new Error("the transport is closed");
    for (const pool of this.origins.values()) pool.destroy(err);
    this.origins.clear();
  }

  /** Counters for tests: connections opened and open now, calls waiting. */
  stats(): { opened: number; open: number; queued: number } {
    let opened = 0;
    let open = 0;
    let queued = 0;
    for (const p of this.origins.values()) {
      opened += p.opened;
      open += p.conns.length;
      queued += p.queueLength;
    }
    return { opened, open, queued };
  }

  private sweep(): void {
    const now = performance.now();
    for (const p of this.origins.values()) p.sweep(now);
  }
}

/** The exchanges waiting or in flight per signal (one abort listener per signal). */
const watched = new AbortWatch<Exchange>((x, reason) => x.abort(reason));

/** One call: its request text, its outcome, and where it is (queued, on a connection, settled). */
class Exchange {
  /** The connection carrying it; null while queued. */
  conn: Conn | null = null;
  settled = false;
  /** Sent once more after a stale kept-alive connection failed it. */
  retried = false;
  deadline = 0;
  readonly head: string;
  readonly body: string | Uint8Array | undefined;
  readonly timeoutMs: number;
  readonly max: number;

  constructor(
    r: TransportRequest,
    path: string,
    host: string,
    private readonly resolveFn: (res: TransportResponse) => void,
    private readonly rejectFn: (err: Error) => void,
    readonly signal = r.signal,
  ) {
    let head = `${r.method} ${path} HTTP/1.1\r\nhost: ${host}\r\n`;
    for (const name in r.headers) {
      const value = r.headers[name] as string;
      if (LINE_BREAK.test(name) || LINE_BREAK.test(value)) throw new TypeError(`header ${JSON.stringify(name)} holds a line break`);
      head += `${name}: ${value}\r\n`;
    }
    if (r.body !== undefined) head += `content-length: ${typeof r.body === "string" ? Buffer.byteLength(r.body) : r.body.byteLength}\r\n`;
    this.head = `${head}\r\n`;
    this.body = r.body;
    this.timeoutMs = r.timeoutMs;
    this.max = r.maxBytes ?? Infinity;
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

const LINE_BREAK = /[\r\n]/;

/** The connections to one origin and the calls waiting for one. */
class Origin {
  readonly conns: Conn[] = [];
  private queue: Exchange[] = [];
  private head = 0;
  opened = 0;
  readonly host: string;
  readonly port: number;
  readonly hostHeader: string;
  /** The connection the last call went to (pipelining: calls of one tick share it). */
  private filling: Conn | undefined;
  /** Set by drain(): resolves once nothing is in flight or waiting. */
  private drained: (() => void) | null = null;

  constructor(
    origin: string,
    private readonly max: number,
    /** Exchanges in flight on one connection at most (1: no pipelining). */
    readonly depth: number,
    private readonly maxQueue: number,
    readonly idleTimeoutMs: number,
  ) {
    const url = new URL(origin);
    if (url.protocol !== "http:" || url.pathname !== "/" || url.username || url.password) throw new TypeError(`not a plain http origin: ${origin}`);
    this.host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    this.port = url.port ? Number(url.port) : 80;
    this.hostHeader = url.host;
  }

  get queueLength(): number {
    return this.queue.length - this.head;
  }

  /**
   * With pipelining, the connection already taking writes this tick while it has room (the writes
   * leave together); then an idle connection, else a new one while under the cap, else the least
   * busy connection with room, else the queue.
   */
  submit(x: Exchange): void {
    if (this.filling?.usable && this.filling.load < this.depth && this.filling.corked) return this.filling.start(x);
    let best: Conn | undefined;
    for (const c of this.conns) {
      if (!c.usable || c.load >= (best?.load ?? this.depth)) continue;
      best = c;
      if (c.load === 0) break;
    }
    if (best?.load !== 0 && this.conns.length < this.max) best = this.open();
    if (!best) {
      if (this.queueLength >= this.maxQueue) return x.reject(new Error(`more than ${this.maxQueue} calls are waiting for a connection`));
      this.queue.push(x);
      return;
    }
    if (this.depth > 1) this.filling = best;
    best.start(x);
  }

  /** A connection read an answer: it takes waiting calls up to its depth, or goes idle. */
  released(conn: Conn): void {
    while (conn.load < this.depth) {
      const x = this.next();
      if (!x) break;
      conn.start(x);
    }
    if (conn.load > 0) return;
    conn.idleSince = performance.now();
    if (this.drained) conn.destroy(new Error("the transport is closed"));
  }

  /** A connection is gone; calls waiting get new connections in its place. */
  gone(conn: Conn): void {
    const at = this.conns.indexOf(conn);
    if (at < 0) return;
    this.conns.splice(at, 1);
    while (this.queueLength > 0 && this.conns.length < this.max) {
      const x = this.next();
      if (x) this.open().start(x);
    }
    this.checkDrained();
  }

  /** Sends a call that failed on a stale kept-alive connection once more, on a fresh connection. */
  retry(x: Exchange): void {
    x.retried = true;
    x.conn = null;
    if (this.conns.length < this.max) return this.open().start(x);
    // Every connection is busy: first in line for the next one.
    if (this.head > 0) this.queue[--this.head] = x;
    else this.queue.unshift(x);
  }

  sweep(now: number): void {
    for (const conn of [...this.conns]) conn.sweep(now);
  }

  /** Lets what is in flight or waiting finish, closing connections as they fall idle. */
  drain(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.drained = resolve;
      for (const conn of [...this.conns]) if (conn.load === 0) conn.destroy(new Error("the transport is closed"));
      this.checkDrained();
    });
  }

  /** Fails what is waiting and in flight, and closes every connection. */
  destroy(err: Error): void {
    const waiting = this.queue.slice(this.head);
    this.queue = [];
    this.head = 0;
    for (const x of waiting) x.reject(err);
    for (const conn of [...this.conns]) conn.destroy(err);
    this.checkDrained();
  }

  private checkDrained(): void {
    if (this.drained && this.conns.length === 0 && this.queueLength === 0) {
      const done = this.drained;
      this.drained = null;
      done();
    }
  }

  /** The next waiting call not settled meanwhile (an aborted one stays in the queue until here). */
  private next(): Exchange | undefined {
    while (this.head < this.queue.length) {
      const x = this.queue[this.head] as Exchange;
      this.queue[this.head++] = undefined as unknown as Exchange;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      if (!x.settled) return x;
    }
    if (this.head > 0) {
      this.queue = [];
      this.head = 0;
    }
    return undefined;
  }

  private open(): Conn {
    this.opened++;
    const conn = new Conn(this);
    this.conns.push(conn);
    return conn;
  }
}

const enum State {
  Head,
  Length,
  Chunked,
  UntilClose,
}

/** Ends the writes of one tick on a connection: they leave as one packet (pipelining). */
function uncork(conn: Conn): void {
  conn.uncork();
}

/** One connection, the exchanges in flight on it (oldest first), and the parser of the oldest one's answer. */
class Conn {
  private readonly socket: Socket;
  private readonly inflight: Exchange[] = [];
  private state = State.Head;
  /** Bytes received and not yet parsed. */
  private pending: Buffer | null = null;
  private status = 0;
  private headText = "";
  private chunks: Buffer[] = [];
  private size = 0;
  /** Body bytes still expected (Length), or of the current chunk (Chunked). */
  private left = 0;
  /** Chunked: reading a chunk's data (true) or its size line (false). */
  private inChunk = false;
  /** The server keeps the connection open after the current answer. */
  private keepAlive = true;
  /** Anything of the oldest exchange's answer arrived (it cannot be sent again then). */
  private answered = false;
  /** Answers read on this connection. */
  private completed = 0;
  private dead = false;
  /** The server said it closes after the answer just read. */
  private closing = false;
  /** Writes of this tick are held to leave together (pipelining). */
  corked = false;
  idleSince = 0;
  /** The server's Keep-Alive timeout hint, ms (Infinity when none). */
  private hintMs = Infinity;

  constructor(private readonly pool: Origin) {
    this.socket = connect({ host: pool.host, port: pool.port });
    this.socket.setNoDelay(true);
    this.socket.on("data", (d: Buffer) => this.onData(d));
    this.socket.on("error", (err) => this.onClose(err));
    this.socket.on("close", () => this.onClose(null));
  }

  get load(): number {
    return this.inflight.length;
  }

  /** Takes new exchanges: alive, and the server did not say it closes. */
  get usable(): boolean {
    return !this.dead && this.keepAlive && !this.closing;
  }

  start(x: Exchange): void {
    this.inflight.push(x);
    x.conn = this;
    x.deadline = performance.now() + x.timeoutMs;
    if (this.pool.depth > 1 && !this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(uncork, this);
    }
    if (typeof x.body === "string") this.socket.write(x.head + x.body);
    else if (x.body === undefined) this.socket.write(x.head);
    else {
      this.socket.write(x.head);
      this.socket.write(x.body);
    }
  }

  uncork(): void {
    this.corked = false;
    if (!this.dead) this.socket.uncork();
  }

  /** An exchange on this connection was aborted: with nothing else alive on it, the connection goes. */
  abandoned(): void {
    if (this.inflight.every((x) => x.settled)) this.destroy(new Error("aborted"));
  }

  /** Closes the connection; what is in flight on it fails with `err`. */
  destroy(err: Error): void {
    if (this.dead) return;
    this.dead = true;
    this.socket.destroy();
    const lost = this.inflight.splice(0);
    this.pool.gone(this);
    for (const x of lost) x.reject(err);
  }

  sweep(now: number): void {
    if (this.inflight.length > 0) {
      for (const x of this.inflight) {
        if (!x.settled && now > x.deadline) return this.destroy(new TimeoutError(`no answer within ${x.timeoutMs} ms`));
      }
    } else if (now - this.idleSince > Math.min(this.pool.idleTimeoutMs, this.hintMs)) {
      this.destroy(new Error("idle"));
    }
  }

  private onClose(err: Error | null): void {
    if (this.dead) return;
    // A close ends an answer framed by the close.
    if (this.inflight.length > 0 && this.state === State.UntilClose && !err) this.finish();
    this.dead = true;
    const lost = this.inflight.splice(0);
    this.pool.gone(this);
    const reason = err ?? new Error("the connection closed before the answer was complete");
    for (const [i, x] of lost.entries()) {
      // Nothing of its answer came, and the connection was a kept-alive one (or the call was not
      // its first): the server closed it as the request went out. Sent once more.
      const unanswered = i > 0 || !this.answered;
      if (unanswered && !x.retried && !x.settled && (this.completed > 0 || i > 0)) this.pool.retry(x);
      else x.reject(reason);
    }
  }

  private onData(d: Buffer): void {
    if (this.inflight.length === 0) {
      // Bytes nobody asked for: the connection is out of step.
      this.destroy(new Error("the server sent bytes outside an exchange"));
      return;
    }
    this.answered = true;
    (this.inflight[0] as Exchange).deadline = performance.now() + (this.inflight[0] as Exchange).timeoutMs;
    let buf = this.pending ? Buffer.concat([this.pending, d]) : d;
    this.pending = null;
    while (buf.length > 0 && this.inflight.length > 0 && !this.dead && !this.closing) {
      const used = this.step(buf);
      if (used < 0) {
        // Needs more bytes than there are.
        this.pending = buf;
        break;
      }
      buf = buf.subarray(used);
    }
    if (this.dead) return;
    if (this.pending === null && buf.length > 0 && !this.closing) {
      // Bytes past every answer asked for: out of step, not reused (the answers read stand).
      this.destroy(new Error("the server sent bytes after the answer"));
      return;
    }
    if (this.closing) {
      // The server closes after this answer: what else was sent on it goes again elsewhere.
      this.dead = true;
      this.socket.destroy();
      const rest = this.inflight.splice(0);
      this.pool.gone(this);
      for (const x of rest) {
        if (!x.retried && !x.settled) this.pool.retry(x);
        else x.reject(new Error("the server closed the connection before this answer"));
      }
      return;
    }
    this.pool.released(this);
  }

  /** Parses from `buf`; returns the bytes used, or -1 when more must arrive first. */
  private step(buf: Buffer): number {
    switch (this.state) {
      case State.Head:
        return this.readHead(buf);
      case State.Length: {
        const n = Math.min(this.left, buf.length);
        if (!this.take(buf.subarray(0, n))) return buf.length;
        this.left -= n;
        if (this.left === 0) this.finish();
        return n;
      }
      case State.Chunked:
        return this.readChunked(buf);
      case State.UntilClose:
        this.take(buf);
        return buf.length;
    }
  }

  private readHead(buf: Buffer): number {
    const end = buf.indexOf(CRLF_CRLF);
    if (end < 0) {
      if (buf.length <= 65_536) return -1;
      this.destroy(new Error("the answer's header is over 64 KiB"));
      return buf.length;
    }
    const text = buf.toString("latin1", 0, end);
    const m = /^HTTP\/1\.([01]) (\d{3})/.exec(text);
    if (!m) {
      this.destroy(new Error(`not an HTTP/1 answer: ${JSON.stringify(text.slice(0, 40))}`));
      return buf.length;
    }
    const status = Number(m[2]);
    if (status >= 100 && status < 200) return end + 4; // 100 Continue and kin: the real answer follows.
    this.status = status;
    this.headText = text;
    this.size = 0;
    this.chunks = [];
    this.keepAlive = m[1] === "1";
    let length = -1;
    let chunked = false;
    let from = text.indexOf("\r\n");
    while (from >= 0) {
      const next = text.indexOf("\r\n", from + 2);
      const line = text.slice(from + 2, next < 0 ? undefined : next);
      from = next;
      const colon = line.indexOf(":");
      if (colon <= 0) continue;
      const name = line.slice(0, colon).toLowerCase();
      if (name === "content-length") length = Number(line.slice(colon + 1).trim());
      else if (name === "transfer-encoding") chunked = line.slice(colon + 1).trim().toLowerCase().endsWith("chunked");
      else if (name === "connection") {
        const value = line.slice(colon + 1).trim().toLowerCase();
        this.keepAlive = value === "keep-alive" || (this.keepAlive && value !== "close");
      } else if (name === "keep-alive") {
        const t = /timeout=(\d+)/i.exec(line);
        if (t) this.hintMs = Math.max(0, Number(t[1]) * 1000 - 1000);
      }
    }
    const x = this.inflight[0] as Exchange;
    if (chunked) {
      this.state = State.Chunked;
      this.inChunk = false;
    } else if (status === 204 || status === 304 || length === 0) {
      this.finish();
    } else if (length > 0) {
      if (!Number.isSafeInteger(length)) {
        this.destroy(new Error(`the answer's content-length is not a number: ${length}`));
        return buf.length;
      }
      if (length > x.max) {
        this.destroy(new Error(`the answer of ${length} bytes is over the limit of ${x.max} bytes`));
        return buf.length;
      }
      this.state = State.Length;
      this.left = length;
    } else {
      this.state = State.UntilClose;
      this.keepAlive = false;
    }
    return end + 4;
  }

  private readChunked(buf: Buffer): number {
    if (this.inChunk) {
      // Chunk data, then its CRLF.
      if (this.left > 0) {
        const n = Math.min(this.left, buf.length);
        if (!this.take(buf.subarray(0, n))) return buf.length;
        this.left -= n;
        return n;
      }
      if (buf.length < 2) return -1;
      this.inChunk = false;
      return 2;
    }
    const eol = buf.indexOf("\r\n");
    if (eol < 0) {
      if (buf.length <= 1024) return -1;
      this.destroy(new Error("a chunk size line is over 1 KiB"));
      return buf.length;
    }
    const size = Number.parseInt(buf.toString("latin1", 0, eol), 16);
    if (!Number.isSafeInteger(size) || size < 0) {
      this.destroy(new Error("a chunk size is not a hex number"));
      return buf.length;
    }
    if (size > 0) {
      this.inChunk = true;
      this.left = size;
      return eol + 2;
    }
    // The last chunk, then trailers (skipped) and an empty line.
    if (buf.length >= eol + 4 && buf[eol + 2] === 13 && buf[eol + 3] === 10) {
      this.finish();
      return eol + 4;
    }
    const end = buf.indexOf(CRLF_CRLF, eol);
    if (end < 0) return -1;
    this.finish();
    return end + 4;
  }

  /** Keeps body bytes, unless they go over the limit (then the connection fails; false). */
  private take(part: Buffer): boolean {
    const x = this.inflight[0] as Exchange;
    this.size += part.length;
    if (this.size > x.max && !x.settled) {
      this.destroy(new Error(`the answer is over the limit of ${x.max} bytes`));
      return false;
    }
    this.chunks.push(part);
    return true;
  }

  /** The oldest exchange's answer is complete: it resolves (or is dropped, if it was aborted). */
  private finish(): void {
    const x = this.inflight.shift() as Exchange;
    this.state = State.Head;
    this.answered = false;
    this.completed++;
    if (!this.keepAlive) this.closing = true;
    const body = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.size);
    this.chunks = [];
    x.conn = null;
    x.resolve(new Answer(this.status, this.headText, body));
  }
}

/** A complete answer; its headers are parsed from the head's text when first read. */
class Answer implements TransportResponse {
  private parsed: Record<string, string | string[] | undefined> | undefined;

  constructor(
    readonly status: number,
    private readonly head: string,
    readonly body: Buffer,
  ) {}

  get headers(): Record<string, string | string[] | undefined> {
    if (this.parsed) return this.parsed;
    const out: Record<string, string | string[] | undefined> = {};
    for (const line of this.head.split("\r\n").slice(1)) {
      const colon = line.indexOf(":");
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      const had = out[name];
      if (had === undefined) out[name] = value;
      else if (Array.isArray(had)) had.push(value);
      else out[name] = name === "set-cookie" ? [had, value] : `${had}, ${value}`;
    }
    this.parsed = out;
    return out;
  }
}
