/**
 * The query parameters blockkit reads off a PostgreSQL URL before handing it to pg: `schema` and
 * libpq's `connect_timeout`. A bad value is refused naming it; the rest of the URL is kept as given.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { ServiceError } from "../../server/errors.js";
import { clientConfig, mapError, splitConnectTimeout } from "../../server/store/postgres/db.js";

describe("PostgreSQL URL parameters", () => {
  it("reads connect_timeout in whole seconds, default 5, and takes it off the URL", () => {
    expect(splitConnectTimeout("postgres://u@127.0.0.1:5432/db")).toEqual({ url: "postgres://u@127.0.0.1:5432/db", timeoutMs: 5000 });
    expect(splitConnectTimeout("postgres://u@127.0.0.1:5432/db?connect_timeout=60&sslmode=disable")).toEqual({
      url: "postgres://u@127.0.0.1:5432/db?sslmode=disable",
      timeoutMs: 60_000,
    });
    const c = clientConfig("postgres://u@127.0.0.1:5432/db?schema=t_1&connect_timeout=2");
    expect(c.connectionTimeoutMillis).toBe(2000);
    expect(c.connectionString).toBe("postgres://u@127.0.0.1:5432/db");
    expect(c.options).toContain("-c search_path=t_1");
  });

  it.each(["0", "-1", "1.5", "abc", "3601", ""])("refuses connect_timeout=%j, naming it", (v) => {
    expect(() => splitConnectTimeout(`postgres://u@h/db?connect_timeout=${v}`)).toThrow(`connect_timeout "${v}" is not a whole number of seconds from 1 to 3600`);
  });

  it("takes a unix socket (?host=/dir), and a server down there is unreachable (503), as on TCP", async () => {
    // A directory without a socket: a PostgreSQL stopped there has removed its .s.PGSQL.5432.
    const dir = mkdtempSync(join(tmpdir(), "blockkit-pgsock-"));
    try {
      const client = new pg.Client(clientConfig(`postgres://postgres@localhost/postgres?host=${encodeURIComponent(dir)}&connect_timeout=2`));
      const err = await client.connect().then(
        () => null,
        (e: unknown) => e,
      );
      expect((err as { code?: string }).code).toBe("ENOENT");
      expect((err as Error).message).toContain(join(dir, ".s.PGSQL.5432"));
      // Before: ENOENT was not a connection error, so a store on a socket answered 500 while PostgreSQL was down.
      const mapped = mapError(err);
      expect(mapped).toBeInstanceOf(ServiceError);
      expect((mapped as ServiceError).code).toBe("UNAVAILABLE");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
