/**
 * The block client's transport seam: one HTTP exchange, a request in, the status and the whole
 * body out. Two implementations:
 * - NodeHttpTransport (here): node:http/node:https with a keep-alive agent. The gateway's: a
 *   Raspberry Pi runs one block, and loading undici costs about 20 MB of RSS (its WebAssembly
 *   HTTP parser), a quarter of the gateway's memory budget.
 * - UndiciTransport (`./undici-transport.ts`): a shared undici dispatcher, for the simulator's
 *   thousands of blocks. BlockClient loads that module only when it is given a dispatcher.
 * The simulator has a third of its own for its readings (simulator/transport/http1-transport.ts).
 */
import * as http from "node:http";
import type * as https from "node:https";
import { abortReason } from "./abort-watch.js";

export interface TransportRequest {
  method: "GET" | "POST";
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  signal?: AbortSignal;
  /** Longest silence while waiting for the answer or between two chunks of it, ms. */
  timeoutMs: number;
  /** Largest answer body accepted, bytes; a larger one fails the exchange. Default: no limit. */
  maxBytes?: number;
  /**
   * The request may reach the server twice: a GET, or a POST whose body carries an idempotency
   * KEY (the server stores a reading once). Only such a request is sent again after a kept-alive
   * connection closed under it; any other (a snapshot upload) fails instead. Default: true for GET.
   */
  idempotent?: boolean;
}

export interface TransportResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** Where dispatch() hands a call's outcome: exactly one of the two, never in the caller's turn. */
export interface TransportCallbacks {
  /** Any complete HTTP answer, whatever its status. */
  answered(res: TransportResponse): void;
  /** No answer: as send()'s rejections. */
  failed(err: Error): void;
}

export interface BlockTransport {
  /**
   * Resolves with any complete HTTP answer, whatever its status. Rejects when there is none: the
   * connection failed or closed early, the timeout passed, the signal aborted, or the body went
   * over `maxBytes`.
   */
  send(req: TransportRequest): Promise<TransportResponse>;
  /**
   * send() without a promise: the outcome goes to `cb` (one object a caller keeps for its calls,
   * not a closure per call). Optional: the simulator's readings take it, ten thousand a second,
   * where each promise and its reaction showed; callers fall back to send() without it.
   */
  dispatch?(req: TransportRequest, cb: TransportCallbacks): void;
  /** Closes the transport's own connections. */
  close(): Promise<void>;
}

/** A call by `transport.dispatch()` where it has one, else by send() with its outcome handed to `cb`. */
export function dispatchTo(transport: BlockTransport, r: TransportRequest, cb: TransportCallbacks): void {
  if (transport.dispatch !== undefined) return transport.dispatch(r, cb);
  transport.send(r).then(
    (res) => cb.answered(res),
    (err: unknown) => cb.failed(err as Error),
  );
}

export interface NodeHttpTransportOptions {
  /** Keep connections open between exchanges. Default true. */
  keepAlive?: boolean;
  /** Most connections open to one host. Default 8. */
  maxSockets?: number;
  /**
   * How long an idle kept-alive connection stays open, ms. Node shortens it to 1 s less than the
   * server's `Keep-Alive: timeout=N` hint, so that the server does not close it under a new request.
   * Default 60 000.
   */
  idleTimeoutMs?: number;
}

/** Errors of a reused idle connection that the server closed as the request went out. */
const STALE = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED"]);


export class NodeHttpTransport implements BlockTransport {
  private readonly agents = new Map<"http:" | "https:", http.Agent>();
  private readonly keepAlive: boolean;
  private readonly maxSockets: number;
  private readonly idleTimeoutMs: number;

  constructor(o: NodeHttpTransportOptions = {}) {
    const bad = (name: string, v: unknown): TypeError => new TypeError(`NodeHttpTransport: ${name} must be a positive integer, got ${String(v)}`);
    if (o.maxSockets !== undefined && !(Number.isInteger(o.maxSockets) && o.maxSockets > 0)) throw bad("maxSockets", o.maxSockets);
    if (o.idleTimeoutMs !== undefined && !(Number.isInteger(o.idleTimeoutMs) && o.idleTimeoutMs > 0)) throw bad("idleTimeoutMs", o.idleTimeoutMs);
    this.keepAlive = o.keepAlive ?? true;
    this.maxSockets = o.maxSockets ?? 8;
    this.idleTimeoutMs = o.idleTimeoutMs ?? 60_000;
  }

  async send(r: TransportRequest): Promise<TransportResponse> {
    try {
      return await this.exchange(r);
    } catch (err) {
      // A kept-alive connection the server closed just as this request went out: nothing was
      // answered, so it is sent once more on a fresh connection (Node's advice, see
      // `request.reusedSocket`), if it may reach the server twice (a GET, a reading with its KEY).
      if (err instanceof StaleSocketError && (r.idempotent ?? r.method === "GET")) return this.exchange(r, false);
      throw err;
    }
  }

  async close(): Promise<void> {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }

  private agent(protocol: "http:" | "https:"): http.Agent {
    let agent = this.agents.get(protocol);
    if (!agent) {
      const options = { keepAlive: this.keepAlive, maxSockets: this.maxSockets, timeout: this.idleTimeoutMs };
      agent = protocol === "http:" ? new http.Agent(options) : new (httpsModule().Agent)(options);
      this.agents.set(protocol, agent);
    }
    return agent;
  }

  private exchange(r: TransportRequest, mayRetry = true): Promise<TransportResponse> {
    return new Promise<TransportResponse>((resolve, reject) => {
      const { signal } = r;
      if (signal?.aborted) return reject(abortReason(signal));
      let url: URL;
      try {
        url = new URL(r.url);
        if (url.protocol !== "http:" && url.protocol !== "https:") throw new TypeError(`not an http(s) URL: ${r.url}`);
      } catch (err) {
        return reject(err as Error);
      }
      const protocol = url.protocol as "http:" | "https:";
      const headers: Record<string, string> = { ...r.headers };
      if (r.body !== undefined) headers["content-length"] = String(Buffer.byteLength(r.body));
      const request = protocol === "http:" ? http.request : httpsModule().request;
      const req = request(url, { method: r.method, headers, agent: this.agent(protocol), timeout: r.timeoutMs });
      let settled = false;
      let answered = false;
      const onAbort = (): void => fail(abortReason(signal as AbortSignal));
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        signal?.removeEventListener("abort", onAbort);
        return true;
      };
      function fail(err: Error): void {
        if (!settle()) return;
        req.destroy();
        const code = (err as NodeJS.ErrnoException).code;
        reject(mayRetry && !answered && req.reusedSocket && code && STALE.has(code) ? new StaleSocketError(err) : err);
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      // Stays attached: a destroyed request may still emit "error" after the exchange settled.
      req.on("error", fail);
      req.on("timeout", () => fail(new TimeoutError(`no answer within ${r.timeoutMs} ms`)));
      req.on("response", (res) => {
        answered = true;
        const max = r.maxBytes ?? Infinity;
        const declared = Number(res.headers["content-length"] ?? 0);
        if (declared > max) return fail(new Error(`the answer of ${declared} bytes is over the limit of ${max} bytes`));
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > max) fail(new Error(`the answer is over the limit of ${max} bytes`));
          else chunks.push(chunk);
        });
        res.on("error", fail);
        res.on("close", () => {
          if (!res.complete) fail(new Error("the connection closed before the answer was complete"));
        });
        res.on("end", () => {
          if (settle()) resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks, size) });
        });
      });
      req.end(r.body);
    });
  }
}

/** No data for `timeoutMs` while waiting for the answer or reading it. */
export class TimeoutError extends Error {
  readonly code = "ETIMEDOUT";
  constructor(message: string) {
    super(message);
    this.name = "TimeoutError";
  }
}

class StaleSocketError extends Error {
  constructor(cause: Error) {
    super(cause.message, { cause });
  }
}

/** node:https is loaded only by a transport that talks to an https URL. */
function httpsModule(): typeof https {
  return process.getBuiltinModule("node:https");
}
