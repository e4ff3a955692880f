/**
 * A chunked body, for the HTTP/1.1 response parser (response-parser.ts): chunk-size lines with
 * their extensions, each chunk's data and CRLF, then the trailers, as llhttp reads them. Apart
 * because it is the one framing with a grammar of its own; the others are a length or the close.
 */
import { FIELDS, badField, trimOws } from "./response-fields.js";
import { type Answer, CR, LF, MORE, type ParseResult, error } from "./response-result.js";

/** Longest chunk-size line (size and extensions), bytes. */
const MAX_CHUNK_LINE = 1024;
/** A chunk-size line: hex digits, then extensions `;name` or `;name=token` or `;name="quoted"`, no spaces. */
const CHUNK_LINE = /^([0-9A-Fa-f]+)(?:;[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:=(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+|"(?:[\t\x20\x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t\x20-\x7e\x80-\xff])*"))?)*$/;

export function chunked(buf: Buffer, eof: boolean, maxBytes: number, bodyAt: number, answer: Answer): ParseResult {
  const parts: Buffer[] = [];
  let size = 0;
  let at = bodyAt;
  const incomplete = (): ParseResult => (eof ? error("the connection closed before the answer was complete") : MORE);
  for (;;) {
    const eol = indexOfCrlf(buf, at);
    if (eol < 0) {
      // No CRLF ahead: an LF there is a bare one.
      if (buf.indexOf(LF, at) >= 0) return error("a chunk-size line not ended by CRLF");
      return buf.length - at > MAX_CHUNK_LINE ? error(`a chunk-size line is over ${MAX_CHUNK_LINE} bytes`) : incomplete();
    }
    const line = buf.toString("latin1", at, eol);
    const m = CHUNK_LINE.exec(line);
    if (!m) return error(`not a chunk size: ${JSON.stringify(line.slice(0, 40))}`);
    const digits = (m[1] as string).replace(/^0+(?=.)/, "");
    // More than 16 hex digits overflows llhttp's 64-bit size; beyond 2^53 no buffer could hold it anyway.
    if (digits.length > 16) return error("a chunk size overflows");
    const n = Number.parseInt(digits, 16);
    at = eol + 2;
    if (n === 0) return trailersAfter(buf, eof, at, parts, size, answer);
    if (size + n > maxBytes) return error(`the answer is over the limit of ${maxBytes} bytes`);
    if (buf.length < at + n + 2) return incomplete();
    if (buf[at + n] !== CR || buf[at + n + 1] !== LF) return error("a chunk's data not followed by CRLF");
    parts.push(buf.subarray(at, at + n));
    size += n;
    at += n + 2;
  }
}

function trailersAfter(buf: Buffer, eof: boolean, at: number, parts: Buffer[], size: number, answer: Answer): ParseResult {
  const trailers: string[] = [];
  for (;;) {
    const eol = indexOfCrlf(buf, at);
    if (eol < 0) {
      if (buf.indexOf(LF, at) >= 0) return error("a trailer line not ended by CRLF");
      return eof ? error("the connection closed in the trailers") : MORE;
    }
    if (eol === at) {
      const body = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size);
      return answer(body, eol + 2, trailers);
    }
    const line = buf.toString("latin1", at, eol);
    if (!FIELDS.test(line)) return error(badField(line));
    const colon = line.indexOf(":");
    const name = line.slice(0, colon);
    // llhttp reads trailers with the header rules: a Content-Length there meets the chunked coding.
    if (name.toLowerCase() === "content-length") return error("a Content-Length in the trailers");
    trailers.push(name, trimOws(line.slice(colon + 1)));
    at = eol + 2;
  }
}

function indexOfCrlf(buf: Buffer, from: number): number {
  return buf.indexOf("\r\n", from, "latin1");
}
