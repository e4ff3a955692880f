/**
 * The block client's errors: every failed call becomes a BlockClientError carrying the HTTP status
 * (0 when there was no answer) and the server's envelope message, so callers can tell "revoked"
 * (401/403), "bad reading" (400/413) and "try later" (network, 429, 5xx) apart, and a 429's
 * Retry-After as a delay. URLs in the messages never carry the user token. The client
 * (block-client.ts) re-exports BlockClientError and retryAfterMs.
 */

/** A failed block call. `status` is 0 for network errors and timeouts. */
export class BlockClientError extends Error {
  /** How long the server asked the client to wait before it asks again (its Retry-After), ms; null when it did not say. */
  readonly retryAfterMs: number | null;

  constructor(
    message: string,
    readonly status: number,
    options?: { cause?: unknown; retryAfterMs?: number | null },
  ) {
    super(message, options);
    this.name = "BlockClientError";
    this.retryAfterMs = options?.retryAfterMs ?? null;
  }
  /** The server is rate limiting this client (429): backpressure, ask again later. */
  get throttled(): boolean {
    return this.status === 429;
  }
  /** The token was refused: the block must activate again. */
  get unauthorized(): boolean {
    return this.status === 401 || this.status === 403;
  }
  /**
   * The payload itself was refused; sending it again will not help. Only 400 and 413: a 404 more
   * likely means a wrong server URL, and dropping readings over it would lose them all.
   */
  get rejected(): boolean {
    return this.status === 400 || this.status === 413;
  }
}

/** A call that got no answer (network, timeout, abort): status 0. */
export function networkError(method: string, url: string, err: unknown): BlockClientError {
  return new BlockClientError(`${method} ${redact(url)}: ${(err as Error).message}`, 0, { cause: err });
}

/** A non-2xx answer, with the server's envelope message when it has one, and its Retry-After. */
export function answerError(method: string, url: string, status: number, answer: Buffer, retryAfter?: string | string[]): BlockClientError {
  const msg = (parseJson(answer) as { error?: unknown } | null)?.error;
  return new BlockClientError(`${method} ${redact(url)} answered ${status}${typeof msg === "string" ? `: ${msg}` : ""}`, status, {
    retryAfterMs: retryAfterMs(retryAfter),
  });
}

/** Longest Retry-After honoured, ms: a server asking for more is asked again after this (a day). */
const RETRY_AFTER_MAX_MS = 86_400_000;

/**
 * A Retry-After field (RFC 9110 10.2.3: delay-seconds, or an HTTP-date) as a delay from now, ms;
 * null when absent or unreadable. A date in the past is no wait (0).
 */
export function retryAfterMs(field: string | string[] | undefined, now: number = Date.now()): number | null {
  const text = (Array.isArray(field) ? field[0] : field)?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return Math.min(RETRY_AFTER_MAX_MS, Number(text) * 1000);
  const at = Date.parse(text);
  if (Number.isNaN(at) || !/[A-Za-z]/.test(text)) return null;
  return Math.min(RETRY_AFTER_MAX_MS, Math.max(0, at - now));
}

/** URLs in error messages never carry the user token. */
function redact(url: string): string {
  return url.replace(/(user_access_token=)[^&]*/, "$1…");
}

/** The answer's JSON, null when empty or not JSON. */
export function parseJson(answer: Buffer): unknown {
  const text = answer.toString("utf8");
  if (text.length === 0) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
