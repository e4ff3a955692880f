/** Shared pieces of the gateway tests; the live server, waits and ports are in test/helpers/. */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `blockkit-${prefix}-`));
}
