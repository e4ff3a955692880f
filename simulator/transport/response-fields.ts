/**
 * The header fields of an answer, for the HTTP/1.1 response parser (response-parser.ts): their
 * grammar (FIELDS, and why a block of lines fails it), the optional white space around values, the
 * last Transfer-Encoding coding, and the lists and records a caller reads them as. Apart because
 * both the head and the trailers of a chunked body (response-chunked.ts) are read with these rules.
 */

/** Every header line: a token, a colon, then a value of HT, visible ASCII, SP and obs-text only. */
export const FIELDS = /^(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[\t\x20-\x7e\x80-\xff]*(?:\r\n|$))*$/;

/** The header fields of a head (ParsedResponse.head) as [name, value, …], in order, names as sent. */
export function headerList(head: string): string[] {
  const out: string[] = [];
  if (head.length === 0) return out;
  for (const line of head.split("\r\n")) {
    const colon = line.indexOf(":");
    out.push(line.slice(0, colon), trimOws(line.slice(colon + 1)));
  }
  return out;
}

/**
 * The header fields as Node's IncomingMessage.headers has them: names lower-cased, repeated fields
 * joined with ", " (set-cookie: an array).
 */
export function headerRecord(head: string): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = {};
  const list = headerList(head);
  for (let i = 0; i < list.length; i += 2) {
    const name = (list[i] as string).toLowerCase();
    const value = list[i + 1] as string;
    const had = out[name];
    if (had === undefined) out[name] = name === "set-cookie" ? [value] : value;
    else if (Array.isArray(had)) had.push(value);
    else out[name] = `${had}, ${value}`;
  }
  return out;
}

export function trimOws(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === 32 || s.charCodeAt(a) === 9)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 32 || s.charCodeAt(b - 1) === 9)) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

export function trimStart(s: string): string {
  let a = 0;
  while (a < s.length && (s.charCodeAt(a) === 32 || s.charCodeAt(a) === 9)) a++;
  return a === 0 ? s : s.slice(a);
}

/** The last coding of a Transfer-Encoding list ("" after a trailing comma: then it is not chunked, as llhttp reads it). */
export function lastCoding(te: string): string {
  return trimOws(te.slice(te.lastIndexOf(",") + 1));
}

/** Why a block of header lines failed FIELDS. */
export function badField(text: string): string {
  for (const line of text.split("\r\n")) {
    if (line.startsWith(" ") || line.startsWith("\t")) return "a folded header line (obs-fold)";
    const colon = line.indexOf(":");
    if (colon <= 0 || !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(line.slice(0, colon))) return `not a header field: ${JSON.stringify(line.slice(0, 40))}`;
    for (let i = colon; i < line.length; i++) {
      const c = line.charCodeAt(i);
      if ((c < 32 && c !== 9) || c === 127) return `a control character in header ${JSON.stringify(line.slice(0, colon))}`;
    }
  }
  return "a malformed header field";
}
