/**
 * The query parameters blockkit reads off a PostgreSQL URL before handing it to pg: `schema` and
 * libpq's `connect_timeout`. A bad value is refused naming it; the rest of the URL is kept as given.
 */
import { describe, expect, it } from "vitest";
import { clientConfig, splitConnectTimeout } from "../../server/store/postgres/db.js";

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
});
