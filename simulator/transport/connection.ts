/**
 * One connection of the HTTP/1.1 client: a socket, the exchanges in flight on it (oldest first,
 * several when pipelined), and the bytes of their answers not yet parsed. The answers are cut by
 * the pure parser (response-parser.ts); this file only decides what happens to the exchanges and
 * the connection.
 */
import { type Socket, connect } from "node:net";
import { TimeoutError } from "../../protocol/transport.js";
import { Answer, type Carrier, type Exchange } from "./exchange.js";
import { parseResponse } from "./response-parser.js";

/** What a connection needs of its pool (pool.ts). */
export interface ConnectionPool {
  readonly host: string;
  readonly port: number;
  /** Exchanges in flight on one connection at most (1: no pipelining). */
  readonly depth: number;
  readonly idleTimeoutMs: number;
  /** The connection read its answers and has room: give it waiting calls, or let it idle. */
  released(conn: Connection): void;
  /** The connection is gone. */
  gone(conn: Connection): void;
  /** Sends an exchange once more on a fresh connection. */
  retry(x: Exchange): void;
}

/** Ends the writes of one tick on a connection: they leave as one packet (pipelining). */
function uncork(conn: Connection): void {
  conn.uncork();
}

export class Connection implements Carrier {
  private readonly socket: Socket;
  private readonly inflight: Exchange[] = [];
  /** Bytes received and not yet used by an answer. */
  private pending: Buffer | null = null;
  /** The parser asked for this many bytes before it can say more (a body framed by Content-Length). */
  private need = 0;
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

  constructor(private readonly pool: ConnectionPool) {
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
    return !this.dead && !this.closing;
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

  private onData(d: Buffer): void {
    if (this.inflight.length === 0) {
      // Bytes nobody asked for: the connection is out of step.
      this.destroy(new Error("the server sent bytes outside an exchange"));
      return;
    }
    const oldest = this.inflight[0] as Exchange;
    oldest.deadline = performance.now() + oldest.timeoutMs;
    this.pending = this.pending ? Buffer.concat([this.pending, d]) : d;
    if (this.pending.length < this.need) return;
    this.parse(false);
    if (this.dead) return;
    if (this.closing) return this.closeAfterAnswer();
    if (this.pending !== null && this.inflight.length === 0) {
      // Bytes past every answer asked for: out of step, not reused (the answers read stand).
      this.destroy(new Error("the server sent bytes after the answer"));
      return;
    }
    this.pool.released(this);
  }

  /** Resolves the exchanges whose answers are complete in `pending`; fails the connection on a malformed one. */
  private parse(eof: boolean): void {
    while (this.pending !== null && this.inflight.length > 0) {
      const x = this.inflight[0] as Exchange;
      const r = parseResponse(this.pending, { eof, maxBytes: x.max });
      if (r.kind === "more") {
        this.need = r.need;
        return;
      }
      if (r.kind === "error") return this.destroy(new Error(r.message));
      this.need = 0;
      this.pending = r.used < this.pending.length ? this.pending.subarray(r.used) : null;
      this.completed++;
      if (r.keepAliveMs !== Infinity) this.hintMs = r.keepAliveMs;
      this.inflight.shift();
      x.conn = null;
      // An aborted exchange's answer is read and dropped (resolve does nothing then).
      x.resolve(new Answer(r.status, r.head, r.body));
      if (!r.keepAlive) {
        this.closing = true;
        return;
      }
    }
  }

  /** The server closes after the answer just read: what else was sent on it goes again elsewhere, if it may. */
  private closeAfterAnswer(): void {
    this.dead = true;
    this.socket.destroy();
    const rest = this.inflight.splice(0);
    this.pool.gone(this);
    for (const x of rest) {
      if (x.retryable && !x.retried && !x.settled) this.pool.retry(x);
      else x.reject(new Error("the server closed the connection before this answer"));
    }
  }

  private onClose(err: Error | null): void {
    if (this.dead) return;
    // A close ends an answer framed by the close (or shows that an answer was cut short).
    let reason = err ?? new Error("the connection closed before the answer was complete");
    if (!err && this.pending !== null && this.inflight.length > 0) {
      const x = this.inflight[0] as Exchange;
      const r = parseResponse(this.pending, { eof: true, maxBytes: x.max });
      if (r.kind === "response") {
        this.inflight.shift();
        this.pending = null;
        x.conn = null;
        x.resolve(new Answer(r.status, r.head, r.body));
      } else if (r.kind === "error") reason = new Error(r.message);
    }
    this.dead = true;
    const answered = this.pending !== null;
    const lost = this.inflight.splice(0);
    this.pool.gone(this);
    for (const [i, x] of lost.entries()) {
      // Nothing of its answer came, and the connection was a kept-alive one (or the call was not
      // its first): the server closed it as the request went out. Sent once more, if it may be.
      const unanswered = i > 0 || !answered;
      if (unanswered && x.retryable && !x.retried && !x.settled && (this.completed > 0 || i > 0)) this.pool.retry(x);
      else x.reject(reason);
    }
  }
}
