/** Minimal cookie parsing and serialising (RFC 6265 names and values; no dependency needed). */

export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    // The first occurrence wins, as browsers send the most specific path first.
    if (name && !out.has(name)) out.set(name, value);
  }
  return out;
}

export interface CookieOptions {
  /** Lifetime in seconds; 0 deletes the cookie. Without it the cookie lasts the browser session. */
  maxAgeSeconds?: number;
  /** Set on HTTPS requests only, so that a plain-HTTP development server still works. */
  secure: boolean;
}

/** A `Set-Cookie` value: always HttpOnly, SameSite=Lax (top-level OAuth redirects keep the session), Path=/. */
export function serializeCookie(name: string, value: string, o: CookieOptions): string {
  const parts = [`${name}=${value}`, "Path=/", "HttpOnly", "SameSite=Lax"];
  if (o.maxAgeSeconds !== undefined) parts.push(`Max-Age=${Math.max(0, Math.floor(o.maxAgeSeconds))}`);
  if (o.secure) parts.push("Secure");
  return parts.join("; ");
}
