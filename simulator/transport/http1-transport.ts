/**
 * The simulator's own HTTP/1.1 client over node:net, for many short calls a second to one
 * plain-http origin: the readings of thousands of simulated blocks. Connections to an origin are
 * kept open between calls, at most `connections` of them (pool.ts). A call takes an idle
 * connection, else opens one under the cap; once every connection is busy, up to `pipelining`
 * calls share one (HTTP/1.1 pipelining; the fleet pipelines 8 for its readings, see
 * simulator/fleet/transport.ts), and the calls made in one tick on a connection leave in one
 * write. Beyond that a call waits in a FIFO queue. Without pipelining (the fleet's held calls, a
 * connection each) the idle connections wait on a stack, the one freed last taken first.
 *
 * Why not undici: at ten thousand readings a second, undici's dispatch path (its request object,
 * the WebAssembly llhttp parser with a callback per header, its handler wrapping and timers) cost
 * about 58 µs of CPU per exchange on CI's machine, two thirds of the simulator's whole cost per
 * event. A block call needs much less: one request written as a single string (exchange.ts), and
 * an answer cut by a pure parser (response-parser.ts, which reads what llhttp reads and is fuzzed
 * against it), with one object per exchange and no timer per exchange (one sweep per transport
 * checks the deadlines). `blockkit sim --transport undici` sends the readings through undici
 * instead.
 *
 * It speaks http: only; an https: URL is refused with a TypeError. When a kept-alive connection
 * closes just as a request went out (nothing of its answer arrived), or the server closes after an
 * answer with pipelined requests behind it, a request that may be sent twice (a GET, or
 * `idempotent`: a reading with its idempotency KEY) goes once more on a fresh connection; any
 * other (a snapshot upload) fails, and the simulator counts the failure.
 */
import { abortReason } from "../../protocol/abort-watch.js";
import type { BlockTransport, TransportCallbacks, TransportRequest, TransportResponse } from "../../protocol/transport.js";
import { Exchange, requestHead } from "./exchange.js";
import { OriginPool } from "./pool.js";

export interface Http1TransportOptions {
  /** Most connections open to one origin. Default 128. */
  connections?: number;
  /** Exchanges in flight on one connection at most, once every connection is busy. Default 1: no pipelining. */
  pipelining?: number;
  /** Most calls waiting for a connection; beyond it a call fails at once. Default 100 000. */
  maxQueue?: number;
  /** How long an idle connection stays open, ms (shortened by the server's Keep-Alive hint). Default 60 000. */
  idleTimeoutMs?: number;
  /**
   * How often deadlines and idle connections are checked, ms: a call times out up to this much
   * late. Default 100. The held calls' transport (thousands of connections, 30 s holds) checks once a second.
   */
  sweepMs?: number;
}
/** URLs whose route is kept (a fleet's blocks have a few each); past it the routes are made anew. */
const MAX_ROUTES = 100_000;

/**
 * Where a URL goes: its origin's pool and its path, and the head of its last request (a block sends
 * the same method and headers object call after call). Kept per URL string: a block client makes
 * each of its URLs once, so the lookup hashes no new string, and a reading costs no URL cutting,
 * no origin lookup and no head written anew.
 */
class Route {
  private method = "";
  private headers: Record<string, string> | null = null;
  private head = "";

  constructor(
    readonly pool: OriginPool,
    readonly path: string,
  ) {}

  headFor(method: string, headers: Record<string, string>): string {
    if (headers !== this.headers || method !== this.method) {
      this.head = requestHead(method, this.path, this.pool.hostHeader, headers);
      this.headers = headers;
      this.method = method;
    }
    return this.head;
  }
}

export class Http1Transport implements BlockTransport {
  private readonly origins = new Map<string, OriginPool>();
  private readonly routes = new Map<string, Route>();
  private readonly connections: number;
  private readonly pipelining: number;
  private readonly maxQueue: number;
  private readonly idleTimeoutMs: number;
  private readonly sweepMs: number;
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(o: Http1TransportOptions = {}) {
    for (const name of ["connections", "pipelining", "maxQueue", "idleTimeoutMs", "sweepMs"] as const) {
      const v = o[name];
      if (v !== undefined && !(Number.isInteger(v) && v > 0)) throw new TypeError(`Http1Transport: ${name} must be a positive integer, got ${String(v)}`);
    }
    this.connections = o.connections ?? 128;
    this.pipelining = o.pipelining ?? 1;
    this.maxQueue = o.maxQueue ?? 100_000;
    this.idleTimeoutMs = o.idleTimeoutMs ?? 60_000;
    this.sweepMs = o.sweepMs ?? 100;
  }

  send(r: TransportRequest): Promise<TransportResponse> {
    return new Promise<TransportResponse>((resolve, reject) => this.dispatch(r, { answered: resolve, failed: reject }));
  }

  /** send() without a promise (see BlockTransport): a failure before the request leaves is reported on a microtask. */
  dispatch(r: TransportRequest, cb: TransportCallbacks): void {
    let err: Error | null = null;
    if (this.closed) err = new Error("the transport is closed");
    else {
      try {
        const route = this.routes.get(r.url) ?? this.route(r.url);
        const x = new Exchange(r, route.headFor(r.method, r.headers), cb);
        if (!x.abortedAtStart) return route.pool.submit(x);
        err = abortReason(r.signal as AbortSignal);
      } catch (e) {
        err = e as Error;
      }
    }
    const failure = err;
    queueMicrotask(() => cb.failed(failure));
  }

  /** A URL's route, made and kept; throws a TypeError for a URL that is not plain http. */
  private route(url: string): Route {
    if (!url.startsWith("http://")) throw new TypeError(`Http1Transport speaks plain http only, not ${url}`);
    const cut = url.indexOf("/", 7);
    const origin = cut < 0 ? url : url.slice(0, cut);
    let pool = this.origins.get(origin);
    if (!pool) {
      pool = new OriginPool(origin, this.connections, this.pipelining, this.maxQueue, this.idleTimeoutMs);
      this.origins.set(origin, pool);
      this.sweeper ??= setInterval(() => this.sweep(), this.sweepMs).unref();
    }
    const route = new Route(pool, cut < 0 ? "/" : url.slice(cut));
    if (this.routes.size >= MAX_ROUTES) this.routes.clear();
    this.routes.set(url, route);
    return route;
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
    this.routes.clear();
  }

  /** Counters for tests: connections opened and open now, calls waiting. */
  stats(): { opened: number; open: number; queued: number } {
    let opened = 0;
    let open = 0;
    let queued = 0;
    for (const p of this.origins.values()) {
      opened += p.opened;
      open += p.conns.size;
      queued += p.queueLength;
    }
    return { opened, open, queued };
  }

  private sweep(): void {
    const now = performance.now();
    for (const p of this.origins.values()) p.sweep(now);
  }
}
