/** Store URLs (see index.ts), parsed without loading any store's modules (the CLI checks them early). */
export type StoreLocation = { kind: "sqlite"; dir: string } | { kind: "postgres"; url: string };

/** Parses a store URL; throws a TypeError naming what it expected. */
export function parseStoreUrl(url: string): StoreLocation {
  if (url.startsWith("sqlite:")) {
    const dir = url.slice("sqlite:".length);
    if (dir === "") throw new TypeError('"sqlite:" needs a directory: sqlite:DIR');
    return { kind: "sqlite", dir };
  }
  if (/^postgres(ql)?:\/\//i.test(url)) {
    try {
      new URL(url);
    } catch {
      throw new TypeError(`"${url}" is not a valid PostgreSQL URL (postgres://user@host:port/database)`);
    }
    return { kind: "postgres", url };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) throw new TypeError(`"${url}" is not a store URL (sqlite:DIR, a directory, or postgres://…)`);
  if (url === "") throw new TypeError("the store URL is empty");
  return { kind: "sqlite", dir: url };
}
