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
