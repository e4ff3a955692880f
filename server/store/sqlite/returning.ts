/**
 * The row of a write with RETURNING, read only once the write is committed. better-sqlite3's
 * `.get()` steps such a statement once and returns the row while the statement (in autocommit,
 * the implicit transaction) is still open; when the commit then fails (SQLITE_FULL on a full disk)
 * the error is lost and the caller answers 200 with a row that was never stored. `.all()` steps to
 * the end, where the commit happens and its error is thrown.
 */
import type { Statement } from "better-sqlite3";

export function returning<T>(stmt: Statement, ...params: unknown[]): T | undefined {
  return (stmt.all(...params) as T[])[0];
}
