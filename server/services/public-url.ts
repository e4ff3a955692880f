/**
 * The listeners' public addresses behind a proxy (`blockkit server --public-url`,
 * `--public-stream-url`): what browsers name as the API's origin and where the camera operations
 * are reached (server/http/stream-cors.ts, the reference at /docs). No I/O, so that the command
 * line checks them without loading the server.
 */

/**
 * `value` as a public address: an http or https URL, an optional path prefix, no user name or
 * password, query or fragment; a trailing slash is dropped. Throws a TypeError naming the value.
 */
export function publicUrl(value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new TypeError(`"${value}" is not a URL: give the address clients use, e.g. https://hub.example:8443`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new TypeError(`"${value}" is not an http or https URL`);
  if (u.username !== "" || u.password !== "") throw new TypeError(`"${value}" carries a user name or password: give the address alone`);
  if (u.search !== "" || u.hash !== "" || value.includes("?") || value.includes("#")) throw new TypeError(`"${value}" has a query or fragment: give the address alone`);
  return `${u.origin}${u.pathname.replace(/\/+$/, "")}`;
}
