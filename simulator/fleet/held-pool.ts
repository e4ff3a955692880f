/**
 * The connections of the fleet's held calls (the commands long-poll, activation): an undici
 * Dispatcher that keeps, per origin, the undici Clients (one connection each, no pipelining) that
 * are free, and hands a call the last one freed, or a new one when none is.
 *
 * Why not undici's Agent: its Pool looks for a free client by walking all of them, and with ten
 * thousand blocks each holding a poll for 30 s, every new poll (333 a second) walked thousands of
 * busy clients: a twentieth of the simulator's CPU at 10,000 blocks, growing with the square of the
 * fleet. Here a client whose call ends goes on a stack of free ones.
 */
import { Client, Dispatcher } from "undici";

export interface HeldPoolOptions {
  /** How long an idle connection stays open, ms. */
  keepAliveTimeout: number;
}

interface Origin {
  free: Client[];
  all: Set<Client>;
}

export class HeldPool extends Dispatcher {
  private readonly origins = new Map<string, Origin>();
  private closed = false;

  constructor(private readonly options: HeldPoolOptions) {
    super();
    if (!Number.isInteger(options.keepAliveTimeout) || options.keepAliveTimeout <= 0) {
      throw new TypeError(`HeldPool: keepAliveTimeout must be a positive integer, got ${String(options.keepAliveTimeout)}`);
    }
  }

  /** Connections open or idle, per origin together (for tests). */
  get size(): number {
    let n = 0;
    for (const o of this.origins.values()) n += o.all.size;
    return n;
  }

  override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    if (this.closed) throw new Error("the held-call pool is closed");
    const key = String(opts.origin);
    let origin = this.origins.get(key);
    if (!origin) {
      origin = { free: [], all: new Set() };
      this.origins.set(key, origin);
    }
    let client = origin.free.pop();
    while (client && (client.closed || client.destroyed)) client = origin.free.pop();
    if (!client) {
      client = new Client(key, { keepAliveTimeout: this.options.keepAliveTimeout, pipelining: 1 });
      origin.all.add(client);
    }
    client.dispatch(opts, new Returning(handler, client, origin.free));
    return true;
  }

  override async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.origins.values()].flatMap((o) => [...o.all].map((c) => c.close())));
    this.origins.clear();
  }

  override async destroy(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.origins.values()].flatMap((o) => [...o.all].map((c) => c.destroy())));
    this.origins.clear();
  }
}

/**
 * The caller's handler, and its client back on the free stack as the call ends: from its last
 * callback, not undici's `drain`, which comes a microtask after the caller has its answer and would
 * have the caller's next call open a second connection.
 */
class Returning implements Dispatcher.DispatchHandler {
  constructor(
    private readonly inner: Dispatcher.DispatchHandler,
    private readonly client: Client,
    private readonly free: Client[],
  ) {}

  onConnect(abort: (err?: Error) => void): void {
    this.inner.onConnect?.(abort);
  }

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean {
    return this.inner.onHeaders?.(status, rawHeaders, resume, statusText) ?? true;
  }

  onData(chunk: Buffer): boolean {
    return this.inner.onData?.(chunk) ?? true;
  }

  onComplete(trailers: string[] | null): void {
    this.release();
    this.inner.onComplete?.(trailers);
  }

  onError(err: Error): void {
    this.release();
    this.inner.onError?.(err);
  }

  private release(): void {
    if (!this.client.closed && !this.client.destroyed) this.free.push(this.client);
  }
}
