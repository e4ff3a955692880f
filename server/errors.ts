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

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ServiceError";
    this.code = code;
    this.statusCode = STATUS[code];
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

/** The store failure behind `err` (itself or a cause), or null when it is something else. */
export function storeFailure(err: unknown): { code: string; message: string } | null {
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && STORE_DOWN.test(code)) return { code, message: (e as Error).message };
  }
  return null;
}

/** The 503 for a write (or read) the store could not do: the same answer on every route. */
export const storeUnavailable = (code: string, cause?: unknown): ServiceError =>
  new ServiceError("UNAVAILABLE", `the store cannot write now (${code}${code === "SQLITE_FULL" || code === "53100" ? ": disk full" : ""}); nothing was stored, retry later`, { cause });
