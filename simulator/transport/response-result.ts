/**
 * The results of the HTTP/1.1 response parser (response-parser.ts) and its options, with what every
 * part of the parser builds them with (the "more" and error results, the CR and LF bytes). Apart so
 * that the head, the chunked body and the header fields, each in its own file, share them without
 * importing the parser.
 */

export interface ParseOptions {
  /** The connection closed: nothing more will arrive (ends a body framed by the close). */
  eof: boolean;
  /** Largest body accepted, bytes; a larger one is an error. Default: no limit. */
  maxBytes?: number;
  /** Largest head (status line and header fields), bytes. Default 64 KiB. */
  maxHeadBytes?: number;
}

export interface ParsedResponse {
  kind: "response";
  status: number;
  /** "1.1", "1.0", … */
  version: string;
  /** The header fields as received, one per line ("Name: value"), CRLF-separated; see headerList(). */
  head: string;
  body: Buffer;
  /** Trailer fields of a chunked body, [name, value, …]. */
  trailers: string[];
  /** Bytes of `buf` this answer took, 1xx heads before it included. */
  used: number;
  /** The server keeps the connection open after this answer. */
  keepAlive: boolean;
  /** The server's `Keep-Alive: timeout=N` hint, ms; Infinity when none. */
  keepAliveMs: number;
}

export type ParseResult =
  | ParsedResponse
  /** Not complete yet; `need`: the length `buf` must reach before the next call can say more (0: any more bytes). */
  | { kind: "more"; need: number }
  | { kind: "error"; message: string };

export const CR = 13;
export const LF = 10;
export const MORE: ParseResult = { kind: "more", need: 0 };

export function error(message: string): ParseResult {
  return { kind: "error", message };
}

export type Answer = (body: Buffer, used: number, trailers?: string[]) => ParsedResponse;
