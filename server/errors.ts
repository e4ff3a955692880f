/**
 * The error catalogue. Every failure the service reports is a ServiceError with a stable code and an
 * HTTP status; it becomes the envelope `{result: 0, error: message, id: 0}` in exactly one place,
 * the error handler in `http/errors.ts`.
 */
export type ErrorCode =
  | "BAD_REQUEST"
  | "UNAUTHORIZED"
  | "FORBIDDEN"
  | "NOT_FOUND"
  | "CONFLICT"
  | "TOO_LARGE"
  | "RATE_LIMITED"
  | "UNAVAILABLE"
  | "TIMEOUT"
  | "INTERNAL";

const STATUS: Record<ErrorCode, number> = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  TOO_LARGE: 413,
  RATE_LIMITED: 429,
  UNAVAILABLE: 503,
  TIMEOUT: 504,
  INTERNAL: 500,
};

export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  /** Whole seconds after which a retry may succeed (sent as Retry-After), when known. */
  readonly retryAfterS: number | undefined;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; retryAfterS?: number }) {
    super(message, options);
    this.name = "ServiceError";
    this.code = code;
    this.statusCode = STATUS[code];
    this.retryAfterS = options?.retryAfterS;
  }
}

export const badRequest = (message: string): ServiceError => new ServiceError("BAD_REQUEST", message);
export const unauthorized = (message: string): ServiceError => new ServiceError("UNAUTHORIZED", message);
export const forbidden = (message: string): ServiceError => new ServiceError("FORBIDDEN", message);
export const notFound = (message: string): ServiceError => new ServiceError("NOT_FOUND", message);
export const conflict = (message: string): ServiceError => new ServiceError("CONFLICT", message);
export const unavailable = (message: string, cause?: unknown): ServiceError =>
  new ServiceError("UNAVAILABLE", message, { cause });
export const timeout = (message: string): ServiceError => new ServiceError("TIMEOUT", message);

/**
 * Codes of a store that cannot write now: SQLite (disk full, I/O error, read-only file, a file it
 * cannot open or read as a database) and PostgreSQL (class 53 insufficient resources, e.g. 53100
 * disk_full; class 08 connection exceptions; 57P01-03 the server shutting down; 25006 read-only).
 */
const STORE_DOWN = /^(SQLITE_(FULL|IOERR|READONLY|CANTOPEN|CORRUPT|NOTADB)|53\d\d\d|08\d\d\d|57P0[123]|25006)/;

/** The first error in `err` and its causes (at most 5 deep) whose string code matches `codes`. */
function codeIn(err: unknown, codes: RegExp): { code: string; message: string } | null {
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && codes.test(code)) return { code, message: (e as Error).message };
  }
  return null;
}

/** The store failure behind `err` (itself or a cause), or null when it is something else. */
export const storeFailure = (err: unknown): { code: string; message: string } | null => codeIn(err, STORE_DOWN);

/**
 * Codes of a store that is sound but could not take its lock in time: SQLite's write lock held past
 * busy_timeout (SQLITE_BUSY, SQLITE_LOCKED and their extended codes; on the embedded store the
 * ingest thread's group commits hold it back to back under a fleet's load) and PostgreSQL's
 * serialization failure, deadlock and lock_not_available (40001, 40P01, 55P03). The transaction
 * was rolled back, so nothing was stored: a 503 to retry, not a 500 and not a degraded store.
 */
const STORE_BUSY = /^(SQLITE_(BUSY|LOCKED)|40001$|40P01$|55P03$)/;

/** The lock a store could not take behind `err` (itself or a cause), or null when it is something else. */
export const storeBusy = (err: unknown): { code: string } | null => codeIn(err, STORE_BUSY);

/** The 503 for a write the store could not take its lock for in time. */
export const storeBusyUnavailable = (code: string, cause?: unknown): ServiceError =>
  new ServiceError("UNAVAILABLE", `the store is busy (${code}); nothing was stored, retry`, { cause });

/** The 503 for a write (or read) the store could not do: the same answer on every route. */
export const storeUnavailable = (code: string, cause?: unknown): ServiceError =>
  new ServiceError("UNAVAILABLE", `the store cannot write now (${code}${code === "SQLITE_FULL" || code === "53100" ? ": disk full" : ""}); nothing was stored, retry later`, { cause });
