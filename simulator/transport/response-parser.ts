/**
 * The HTTP/1.1 response parser of the simulator's client, as a pure function: the bytes received
 * so far in, one answer (or "need more", or an error) out. No state is kept between calls: a
 * connection keeps the bytes not yet used and calls again when more arrive (for a body framed by
 * Content-Length, not before the whole of it is there).
 *
 * It accepts what Node's own parser (llhttp in its default, strict mode) accepts and rejects what it
 * rejects, so that the simulator never reads an answer differently from the gateway or a Node
 * client; test/simulator/transport/response-parser.test.ts checks this against node:http with a
 * seeded differential fuzz. In particular: CRLF line ends only; header names are tokens; values
 * hold no control character but HT; obs-fold, a Content-Length beside Transfer-Encoding, a second
 * Content-Length (even an equal one) and a length that is not plain digits are errors; a
 * Transfer-Encoding whose last coding is not `chunked` reads until the close; 1xx heads are
 * skipped; 204 and 304 have no body.
 */
import { chunked } from "./response-chunked.js";
import { FIELDS, badField, lastCoding, trimOws, trimStart } from "./response-fields.js";
import { type Answer, CR, LF, MORE, type ParseOptions, type ParseResult, type ParsedResponse, error } from "./response-result.js";

// The parts of the parser are in response-result.ts, response-fields.ts and response-chunked.ts;
// importers take what they need from here.
export { headerList, headerRecord } from "./response-fields.js";
export type { ParseOptions, ParseResult, ParsedResponse } from "./response-result.js";

const STATUS_LINE = /^HTTP\/(\d\.\d) (\d{3})(?:$| )/;
const VERSIONS = new Set(["1.1", "1.0", "0.9", "2.0"]);
/** A reason phrase: no bare CR or LF (llhttp takes any other byte, NUL included). */
const REASON = /^[^\r\n]*$/;
/** A Content-Length value after the spaces and tabs that follow the colon: digits, then spaces only. */
const LENGTH = /^([0-9]+) *$/;

const HTTP_SLASH = Buffer.from("HTTP/", "latin1");

/** One answer from the start of `buf` (1xx answers before it are skipped). */
export function parseResponse(buf: Buffer, o: ParseOptions): ParseResult {
  const maxHead = o.maxHeadBytes ?? 65_536;
  const maxBytes = o.maxBytes ?? Infinity;
  let at = 0;
  for (;;) {
    // CR and LF bytes before a status line are skipped, as llhttp does.
    while (buf[at] === CR || buf[at] === LF) at++;
    if (at >= buf.length) return o.eof ? error("the connection closed before an answer") : MORE;
    // Bytes that cannot start an answer fail at once, not when a head's worth has arrived.
    const lead = Math.min(5, buf.length - at);
    if (buf.compare(HTTP_SLASH, 0, lead, at, at + lead) !== 0) return error(`not an HTTP/1 answer: ${JSON.stringify(buf.toString("latin1", at, at + 16))}`);
    const head = readHead(buf, at, maxHead);
    if (head === null) return o.eof ? error("the connection closed in the answer's head") : MORE;
    if (typeof head === "string") return error(head);
    const { status, version, fields, bodyAt } = head;
    const framing = framingOf(fields, version);
    if (typeof framing === "string") return error(framing);
    if (status >= 100 && status < 200) {
      if (status === 101) return error("101 Switching Protocols, and no upgrade was asked");
      at = bodyAt;
      continue;
    }
    return body(buf, o.eof, maxBytes, { status, version, head: fields, ...framing }, bodyAt);
  }
}

interface Head {
  status: number;
  version: string;
  /** The header lines, CRLF-separated. */
  fields: string;
  bodyAt: number;
}

/** The head starting at `at`: null while incomplete, a string for what is wrong with it. */
function readHead(buf: Buffer, at: number, maxHead: number): Head | string | null {
  // The status line ends at its CR; llhttp takes CR CR as well as CR LF there.
  const cr = buf.indexOf(CR, at);
  if (cr < 0 || cr + 1 >= buf.length) return buf.length - at > maxHead ? `the answer's head is over ${maxHead} bytes` : null;
  const statusLine = buf.toString("latin1", at, cr);
  const m = STATUS_LINE.exec(statusLine);
  if (!m) return `not an HTTP/1 status line: ${JSON.stringify(statusLine.slice(0, 40))}`;
  const version = m[1] as string;
  if (!VERSIONS.has(version)) return `unknown HTTP version ${version}`;
  if (!REASON.test(statusLine)) return "a line feed in the reason phrase";
  if (buf[cr + 1] !== LF && buf[cr + 1] !== CR) return "the status line's CR is not followed by LF";
  const from = cr + 2;
  if (buf.length < from + 2) return null;
  let fields = "";
  let bodyAt = from + 2;
  if (buf[from] !== CR || buf[from + 1] !== LF) {
    const end = buf.indexOf("\r\n\r\n", from, "latin1");
    if (end < 0) return buf.length - at > maxHead ? `the answer's head is over ${maxHead} bytes` : null;
    fields = buf.toString("latin1", from, end);
    bodyAt = end + 4;
    if (!FIELDS.test(fields)) return badField(fields);
  }
  if (bodyAt - at > maxHead) return `the answer's head is over ${maxHead} bytes`;
  return { status: Number(m[2]), version, fields, bodyAt };
}

interface Framing {
  /** Content-Length, -1 when none. */
  length: number;
  /** The Transfer-Encoding codings, lower case, null when none. */
  te: string | null;
  keepAlive: boolean;
  keepAliveMs: number;
}

/** What the header fields say of the body and the connection (1xx heads are checked the same). */
function framingOf(fields: string, version: string): Framing | string {
  let length = -1;
  let te: string | null = null;
  let keepAlive = version === "1.1";
  let keepAliveMs = Infinity;
  // Only four fields matter here; the rest are split when someone reads them (headerList).
  const lower = fields.toLowerCase();
  for (let from = 0; from < lower.length; ) {
    const eol = lower.indexOf("\r\n", from);
    const stop = eol < 0 ? lower.length : eol;
    const c = lower.charCodeAt(from);
    // c, t, k: the first letters of the fields below; other lines are passed over unsplit.
    if (c === 99 || c === 116 || c === 107) {
      const colon = lower.indexOf(":", from);
      const name = lower.slice(from, colon);
      if (name === "content-length") {
        if (length >= 0) return "a second Content-Length";
        const v = LENGTH.exec(trimStart(lower.slice(colon + 1, stop)));
        if (!v) return `Content-Length is not a number: ${JSON.stringify(lower.slice(colon + 1, stop).slice(0, 40))}`;
        // llhttp keeps 64 bits; a length past 2^53 cannot arrive anyway, but a 304 may declare it.
        const digits = (v[1] as string).replace(/^0+(?=.)/, "");
        if (digits.length > 20 || (digits.length === 20 && digits > "18446744073709551615")) return `Content-Length overflows: ${digits}`;
        length = Number(digits);
      } else if (name === "transfer-encoding") {
        const v = trimOws(lower.slice(colon + 1, stop));
        te = te === null ? v : `${te}, ${v}`;
      } else if (name === "connection") {
        for (const option of lower.slice(colon + 1, stop).split(",")) {
          const t = trimOws(option);
          if (t === "close") keepAlive = false;
          else if (t === "keep-alive" && version === "1.0") keepAlive = true;
        }
      } else if (name === "keep-alive") {
        const t = /timeout=(\d+)/.exec(lower.slice(colon + 1, stop));
        if (t) keepAliveMs = Math.max(0, Number(t[1]) * 1000 - 1000);
      }
    }
    from = stop + 2;
  }
  if (te !== null && length >= 0) return "both Content-Length and Transfer-Encoding";
  return { length, te, keepAlive, keepAliveMs };
}

/** The body as the framing says, then the answer. */
function body(buf: Buffer, eof: boolean, maxBytes: number, h: { status: number; version: string; head: string } & Framing, bodyAt: number): ParseResult {
  const { status, version, head, length, te } = h;
  let keepAlive = h.keepAlive;
  const keepAliveMs = h.keepAliveMs;
  const answer = (body: Buffer, used: number, trailers: string[] = []): ParsedResponse => ({
    kind: "response",
    status,
    version,
    head,
    body,
    trailers,
    used,
    keepAlive,
    keepAliveMs,
  });
  if (status === 204 || status === 304) return answer(buf.subarray(bodyAt, bodyAt), bodyAt);
  if (te !== null) {
    if (lastCoding(te) === "chunked") return chunked(buf, eof, maxBytes, bodyAt, answer);
    keepAlive = false;
    return untilClose(buf, eof, maxBytes, bodyAt, answer);
  }
  if (length < 0) {
    keepAlive = false;
    return untilClose(buf, eof, maxBytes, bodyAt, answer);
  }
  if (length > maxBytes) return error(`the answer of ${length} bytes is over the limit of ${maxBytes} bytes`);
  const total = bodyAt + length;
  if (buf.length < total) return eof ? error("the connection closed before the answer was complete") : { kind: "more", need: total };
  return answer(buf.subarray(bodyAt, total), total);
}

function untilClose(buf: Buffer, eof: boolean, maxBytes: number, bodyAt: number, answer: Answer): ParseResult {
  if (buf.length - bodyAt > maxBytes) return error(`the answer is over the limit of ${maxBytes} bytes`);
  return eof ? answer(buf.subarray(bodyAt), buf.length) : MORE;
}
