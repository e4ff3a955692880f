/**
 * The simulator's HTTP/1.1 response parser against Node's own (llhttp through node:http): a seeded
 * differential fuzz over answers built from the framings and their known traps (Content-Length and
 * Transfer-Encoding, duplicate, negative and malformed lengths, chunk sizes and extensions,
 * trailers, obs-fold, bad status lines and header fields, 1xx heads, heads cut anywhere), then
 * mutated a byte at a time. Both must agree on accept or reject, and on the status, the header
 * fields, the body and the trailers. Every case is also fed in two parts split at every byte: a
 * prefix is "more" (or already an error of a rejected answer), never a different answer.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Random } from "../../../simulator/random.js";
import { type ParseResult, headerList, headerRecord, parseResponse } from "../../../simulator/transport/response-parser.js";
import { NodeOracle, type OracleOutcome } from "./node-oracle.js";

const oracle = new NodeOracle();
beforeAll(() => oracle.start());
afterAll(() => oracle.stop());

function pick<T>(rng: Random, list: readonly T[]): T {
  return list[rng.int(list.length)] as T;
}

const VERSIONS = ["1.1", "1.1", "1.1", "1.0", "0.9", "2.0", "1.2", "3.0", "1.x"];
const STATUSES = ["200", "200", "201", "204", "304", "404", "503", "099", "999", "20", "2000", "2x0"];
const REASONS = [" OK", " OK", " Not Found", "", " ", " O\tK", " O\x01K", " O\0K", " \xe9t\xe9", "  two spaces"];
const CONTENT_LENGTH = ["Content-Length", "content-length", "CONTENT-LENGTH"];
const TE_VALUES = ["chunked", "CHUNKED", "gzip, chunked", "chunked, gzip", "gzip", " chunked ", ", chunked", "chunked, chunked", "identity", "chunkedx"];
const NOISE = [
  "X-A: 1",
  "X-A: 2",
  "Content-Type: application/json",
  "Set-Cookie: a=1",
  "Set-Cookie: b=2",
  "Connection: keep-alive",
  "Connection: close",
  "Keep-Alive: timeout=5",
  "X-Empty:",
  "X-Spaces:   a b  \t",
  "X-Tab: a\tb",
  "X-High: \xe9\xff",
  "X-Ctl: a\x01b",
  "X-Del: a\x7fb",
  "X-Nul: a\0b",
  "X(bad): 1",
  "X-Space : 1",
  ": no name",
  "no colon",
  " folded continuation",
  "\tfolded with a tab",
];

/** One answer's bytes, mostly well framed (so that accepting is exercised too), with traps mixed in. */
function generate(rng: Random): string {
  let out = "";
  if (rng.next() < 0.1) out += "\r\n";
  if (rng.next() < 0.15) out += rng.next() < 0.5 ? "HTTP/1.1 100 Continue\r\n\r\n" : "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\nContent-Length: 3\r\n\r\n";
  const version = rng.next() < 0.85 ? "1.1" : pick(rng, VERSIONS);
  const status = rng.next() < 0.8 ? pick(rng, ["200", "200", "201", "404", "503", "204", "304"]) : pick(rng, STATUSES);
  out += rng.next() < 0.03 ? pick(rng, ["http/1.1 200 OK", "HTTP/1.1  200 OK", "HTTP/1.1 200OK", "HTTP/11 200 OK", "SSH-2.0-x"]) : `HTTP/${version} ${status}${rng.next() < 0.85 ? " OK" : pick(rng, REASONS)}`;
  out += "\r\n";
  const body = "x".repeat(rng.int(3)) + pick(rng, ["", "hello", "{\"result\":1}", "a\r\nb", "0\r\n\r\n"]);
  const framing = pick(rng, ["length", "length", "chunked", "chunked", "close", "both"]);
  const fields: string[] = [];
  for (let n = rng.int(3); n > 0; n--) fields.push(pick(rng, NOISE.slice(0, rng.next() < 0.7 ? 11 : NOISE.length)));
  if (framing === "length" || framing === "both") {
    const name = pick(rng, CONTENT_LENGTH);
    const len = String(body.length);
    const r = rng.next();
    const value =
      r < 0.7
        ? len
        : pick(rng, [`  ${len}  `, `\t${len}`, `${len}\t`, `0${len}`, `-${len}`, `+${len}`, `${len}, ${len}`, "", "1 2", "0x2", "99999999999999999999", String(body.length + 1), String(Math.max(0, body.length - 1))]);
    fields.push(`${name}:${rng.next() < 0.9 ? " " : ""}${value}`);
    if (rng.next() < 0.08) fields.push(`${name}: ${rng.next() < 0.5 ? len : String(body.length + 1)}`);
  }
  if (framing === "chunked" || framing === "both") {
    fields.push(`Transfer-Encoding: ${rng.next() < 0.7 ? "chunked" : pick(rng, TE_VALUES)}`);
    if (rng.next() < 0.05) fields.push("Transfer-Encoding: chunked");
  }
  // Shuffle the fields a little: framing first or last.
  if (rng.next() < 0.5) fields.reverse();
  for (const f of fields) out += `${f}${rng.next() < 0.02 ? "\n" : "\r\n"}`;
  out += "\r\n";
  const chunkedBody = framing === "chunked" || framing === "both";
  if (chunkedBody && !(status === "204" || status === "304") && rng.next() < 0.95) out += chunk(rng, body);
  else if (status === "204" || status === "304") {
    // Nothing after the head: bytes there would be a second answer.
  } else if (framing === "close" && rng.next() < 0.5) out += body;
  else out += body.slice(0, rng.next() < 0.05 ? body.length - 1 : body.length);
  if (rng.next() < 0.03) out = out.slice(0, rng.int(out.length + 1));
  return out;
}

function chunk(rng: Random, body: string): string {
  let out = "";
  let rest = body;
  while (rest.length > 0) {
    const n = 1 + rng.int(rest.length);
    let size = n.toString(16);
    const r = rng.next();
    if (r < 0.1) size = size.toUpperCase();
    else if (r < 0.15) size = `00${size}`;
    else if (r < 0.18) size = `${size} `;
    else if (r < 0.2) size = `-${size}`;
    else if (r < 0.22) size = "zz";
    else if (r < 0.23) size = "ffffffffffffffffff";
    const ext = rng.next() < 0.1 ? pick(rng, [";a=b", ";a", ';a="b c"', "; a=b", ";a=\x01"]) : "";
    out += `${size}${ext}${rng.next() < 0.02 ? "\n" : "\r\n"}${rest.slice(0, n)}${rng.next() < 0.02 ? "" : "\r\n"}`;
    rest = rest.slice(n);
  }
  out += rng.next() < 0.05 ? "000" : "0";
  out += "\r\n";
  const r = rng.next();
  if (r < 0.1) out += "X-Sum: 1\r\nX-More: a b\r\n";
  else if (r < 0.13) out += pick(rng, ["Content-Length: 5\r\n", " folded\r\n", "X bad: 1\r\n", "X-T: a\x01\r\n"]);
  if (rng.next() < 0.97) out += "\r\n";
  return out;
}

/** A byte inserted, replaced or deleted somewhere in the head (where the traps are). */
function mutate(rng: Random, text: string): string {
  const headEnd = text.indexOf("\r\n\r\n");
  const at = rng.int((headEnd < 0 ? text.length : headEnd) + 1);
  const ch = pick(rng, [" ", "\t", "\r", "\n", "\0", "\x01", "\x7f", "\xff", ":", ";", ",", "0", "a", "\r\n"]);
  const r = rng.next();
  if (r < 0.4) return text.slice(0, at) + ch + text.slice(at);
  if (r < 0.8) return text.slice(0, at) + ch + text.slice(at + 1);
  return text.slice(0, at) + text.slice(at + 1);
}

interface Seen {
  ok: boolean;
  status?: number;
  headers?: string[];
  body?: string;
  trailers?: string[];
}

function ours(bytes: Buffer): Seen {
  const r = parseResponse(bytes, { eof: true });
  if (r.kind !== "response") return { ok: false };
  // node:http reads bytes after the answer as the start of the next one, and fails the request
  // when they cannot be (the client's connection treats them as out of step too).
  if (r.used < bytes.length && parseResponse(bytes.subarray(r.used), { eof: false }).kind === "error") return { ok: false };
  return { ok: true, status: r.status, headers: headerList(r.head), body: r.body.toString("latin1"), trailers: r.trailers };
}

function theirs(o: OracleOutcome): Seen {
  if (!o.ok) return { ok: false };
  return { ok: true, status: o.status, headers: o.headers, body: o.body.toString("latin1"), trailers: o.trailers };
}

describe("the response parser against node:http", () => {
  it("agrees with llhttp on a seeded fuzz of framings, traps and mutations", async () => {
    // FUZZ_SEED and FUZZ_CASES run a longer search by hand; the suite's run is fixed and fast.
    const rng = new Random(Number(process.env.FUZZ_SEED ?? 20261124));
    const cases: string[] = [];
    for (let i = 0; i < Number(process.env.FUZZ_CASES ?? 700); i++) {
      const text = generate(rng);
      cases.push(i % 3 === 2 ? mutate(rng, text) : text);
    }
    const outcomes = await Promise.all(cases.map((c) => oracle.parse(Buffer.from(c, "latin1"))));
    const disagreements: string[] = [];
    let accepted = 0;
    for (const [i, text] of cases.entries()) {
      const bytes = Buffer.from(text, "latin1");
      const mine = ours(bytes);
      const node = theirs(outcomes[i] as OracleOutcome);
      if (node.ok) accepted++;
      if (JSON.stringify(mine) !== JSON.stringify(node)) {
        const why = (outcomes[i] as OracleOutcome).ok ? "" : ` (node: ${(outcomes[i] as { error: string }).error})`;
        disagreements.push(`${JSON.stringify(text)}\n  ours ${JSON.stringify(mine)}\n  node ${JSON.stringify(node)}${why}`);
      }
    }
    expect(disagreements.slice(0, 25).join("\n")).toBe("");
    // The fuzz exercises both sides.
    expect(accepted).toBeGreaterThan(cases.length * 0.3);
    expect(accepted).toBeLessThan(cases.length * 0.8);
  });

  it("says 'more' for every prefix of an answer, whatever the split, and the same answer once all is there", () => {
    const rng = new Random(7);
    for (let i = 0; i < 300; i++) {
      const bytes = Buffer.from(generate(rng), "latin1");
      const whole = parseResponse(bytes, { eof: true });
      const framedByClose = whole.kind === "response" && !whole.keepAlive && parseResponse(bytes, { eof: false }).kind === "more";
      for (let k = 0; k < bytes.length; k++) {
        const part = parseResponse(bytes.subarray(0, k), { eof: false });
        if (whole.kind === "response") {
          expect(part.kind, `${JSON.stringify(bytes.toString("latin1"))} cut at ${k}`).toBe("more");
          if (part.kind === "more") expect(part.need === 0 || part.need > k).toBe(true);
        } else {
          expect(part.kind).not.toBe("response");
        }
      }
      if (whole.kind === "response" && !framedByClose) expect(parseResponse(bytes, { eof: false })).toEqual(whole);
    }
  });
});

describe("the response parser", () => {
  const parse = (text: string, eof = false, maxBytes?: number): ParseResult => parseResponse(Buffer.from(text, "latin1"), { eof, maxBytes });

  it("takes one answer and says how many bytes it used, leaving the next one's", () => {
    const two = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 204 No Content\r\n\r\n";
    const first = parse(two);
    expect(first).toMatchObject({ kind: "response", status: 200, used: 40, keepAlive: true });
    expect(parse(two.slice(40))).toMatchObject({ kind: "response", status: 204, used: 27 });
  });

  it("asks for the whole of a body framed by Content-Length at once", () => {
    expect(parse("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nab")).toEqual({ kind: "more", need: 140 });
  });

  it("refuses a body over maxBytes, declared, chunked or until the close, before it arrives in full", () => {
    expect(parse("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", false, 10)).toMatchObject({ kind: "error", message: expect.stringMatching(/over the limit of 10 bytes/) as unknown });
    expect(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n", false, 10)).toMatchObject({ kind: "error" });
    expect(parse(`HTTP/1.1 200 OK\r\n\r\n${"x".repeat(11)}`, false, 10)).toMatchObject({ kind: "error" });
  });

  it("reads the connection's fate and the Keep-Alive hint", () => {
    expect(parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")).toMatchObject({ keepAlive: false });
    expect(parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")).toMatchObject({ keepAlive: false });
    expect(parse("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n")).toMatchObject({ keepAlive: true });
    expect(parse("HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nContent-Length: 0\r\n\r\n")).toMatchObject({ keepAlive: true, keepAliveMs: 4000 });
  });

  it("gives the header fields as Node's IncomingMessage.headers has them", () => {
    const r = parse("HTTP/1.1 200 OK\r\nX-A: 1\r\nx-a: 2\r\nSet-Cookie: a\r\nContent-Length: 0\r\n\r\n");
    expect(r.kind).toBe("response");
    if (r.kind === "response") expect(headerRecord(r.head)).toEqual({ "x-a": "1, 2", "set-cookie": ["a"], "content-length": "0" });
  });
});
