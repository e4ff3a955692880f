/**
 * The connections of the HTTP/1.1 client to one origin, and the calls waiting for one. Without
 * pipelining (depth 1: the held calls, each keeping its connection for up to 30 s) the idle
 * connections wait on a stack and a call takes the one freed last, so that a block's renewed poll
 * gets the connection its previous poll just gave back, and nothing walks thousands of busy ones.
 */
import { Connection, type ConnectionPool } from "./connection.js";
import type { Exchange } from "./exchange.js";

export class OriginPool implements ConnectionPool {
  readonly conns = new Set<Connection>();
  /** Depth 1: the connections that fell idle, last freed on top (some may be busy or gone since: skipped). */
  private readonly idle: Connection[] = [];
  private queue: Exchange[] = [];
  private head = 0;
  opened = 0;
  readonly host: string;
  readonly port: number;
  readonly hostHeader: string;
  /** The connection the last call went to (pipelining: calls of one tick share it). */
  private filling: Connection | undefined;
  /** Set by drain(): resolves once nothing is in flight or waiting. */
  private drained: (() => void) | null = null;

  /** Throws a TypeError for an origin that is not plain http without credentials. */
  constructor(
    origin: string,
    private readonly max: number,
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
    if (this.depth === 1) return this.submitOne(x);
    if (this.filling?.usable && this.filling.load < this.depth && this.filling.corked) return this.filling.start(x);
    let best: Connection | undefined;
    for (const c of this.conns) {
      if (!c.usable || c.load >= (best?.load ?? this.depth)) continue;
      best = c;
      if (c.load === 0) break;
    }
    if (best?.load !== 0 && this.conns.size < this.max) best = this.open();
    if (!best) {
      if (this.queueLength >= this.maxQueue) return x.reject(new Error(`more than ${this.maxQueue} calls are waiting for a connection`));
      this.queue.push(x);
      return;
    }
    if (this.depth > 1) this.filling = best;
    best.start(x);
  }

  /** Depth 1: the idle connection freed last, else a new one under the cap, else the queue. */
  private submitOne(x: Exchange): void {
    let conn: Connection | undefined;
    while ((conn = this.idle.pop()) !== undefined) if (conn.usable && conn.load === 0) return conn.start(x);
    if (this.conns.size < this.max) return this.open().start(x);
    if (this.queueLength >= this.maxQueue) return x.reject(new Error(`more than ${this.maxQueue} calls are waiting for a connection`));
    this.queue.push(x);
  }

  released(conn: Connection): void {
    while (conn.load < this.depth) {
      const x = this.next();
      if (!x) break;
      conn.start(x);
    }
    if (conn.load > 0) return;
    conn.idleSince = performance.now();
    if (this.drained) conn.destroy(new Error("the transport is closed"));
    else if (this.depth === 1) this.idle.push(conn);
  }

  /** Calls waiting get new connections in place of the one gone. */
  gone(conn: Connection): void {
    if (!this.conns.delete(conn)) return;
    // Depth 1: a gone connection left on the idle stack is skipped when popped; the stack is cut
    // back when the dead outnumber the live, so that it cannot grow past twice the connections.
    if (this.idle.length > 2 * this.conns.size + 16) this.compactIdle();
    while (this.queueLength > 0 && this.conns.size < this.max) {
      const x = this.next();
      if (x) this.open().start(x);
    }
    this.checkDrained();
  }

  retry(x: Exchange): void {
    x.retried = true;
    x.conn = null;
    if (this.conns.size < this.max) return this.open().start(x);
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

  private compactIdle(): void {
    let kept = 0;
    // A gone connection is dead, so not usable.
    for (const c of this.idle) if (c.usable && c.load === 0) this.idle[kept++] = c;
    this.idle.length = kept;
  }

  private checkDrained(): void {
    if (this.drained && this.conns.size === 0 && this.queueLength === 0) {
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

  private open(): Connection {
    this.opened++;
    const conn = new Connection(this);
    this.conns.add(conn);
    return conn;
  }
}
