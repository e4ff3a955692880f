/**
 * Outgoing HTTP of the automation features (webhook actuators, the SMS gateway, callbacks, file
 * hosts): undici with a bounded time per request. The dispatcher is injected so tests and the
 * server can share or replace the connection pool.
 */
import { type Dispatcher, request } from "undici";

export interface OutgoingOptions {
  dispatcher?: Dispatcher | undefined;
  /** Whole-request limit (connect, headers and body), ms. */
  timeoutMs: number;
  headers?: Record<string, string>;
  /** Aborts the request early (a stopping feature). */
  signal?: AbortSignal | undefined;
}

export interface OutgoingResult {
  status: number;
}

export class OutgoingError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "OutgoingError";
  }
}

/** Sends a body and answers the status; a network failure or timeout throws OutgoingError; the answer body is discarded. */
export async function send(
  method: "POST" | "PUT",
  url: string,
  body: string | Buffer,
  contentType: string,
  o: OutgoingOptions,
): Promise<OutgoingResult> {
  // One controller per request rather than AbortSignal.any() over a long-lived signal, which on
  // Node 20 keeps every derived signal alive as long as the parent (nodejs/node#48951).
  const ac = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ac.abort();
  }, o.timeoutMs);
  const onAbort = (): void => ac.abort();
  o.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const res = await request(url, {
      method,
      body,
      headers: { "content-type": contentType, ...o.headers },
      dispatcher: o.dispatcher,
      signal: ac.signal,
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
    });
    await res.body.dump();
    return { status: res.statusCode };
  } catch (err) {
    const reason = timedOut ? `no answer within ${o.timeoutMs} ms` : (err as Error).message;
    throw new OutgoingError(`${method} ${redactTarget(url)} failed: ${reason}`, null, { cause: err });
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener("abort", onAbort);
  }
}

/** Sends JSON and requires a 2xx answer. */
export async function postJson(url: string, payload: unknown, o: OutgoingOptions): Promise<OutgoingResult> {
  const r = await send("POST", url, JSON.stringify(payload), "application/json", o);
  if (r.status < 200 || r.status > 299) {
    throw new OutgoingError(`POST ${redactTarget(url)} answered ${r.status}`, r.status);
  }
  return r;
}

/**
 * Only the origin of a URL, for messages and logs: paths and queries often carry keys (e.g.
 * `…/with/key/<secret>` of webhook services), and user info carries passwords.
 */
export function redactTarget(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return "(invalid URL)";
  }
}
