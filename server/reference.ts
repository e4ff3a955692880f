/**
 * The API reference as committed in docs/openapi.json: built from a server on a throw-away store,
 * with the default addresses (so the text depends only on the code). `blockkit openapi` writes it;
 * a test fails when the committed file differs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { BlockkitServer } from "./controller.js";
import { openapiDocument } from "./http/openapi/index.js";

/** Where the reference lives in the repository, and the command that writes it. */
export const REFERENCE_PATH = "docs/openapi.json";
export const REFERENCE_COMMAND = "npm run openapi";

export async function referenceText(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "blockkit-openapi-"));
  const server = new BlockkitServer({ dataDir: dir, logger: pino({ level: "silent" }) });
  try {
    await server.init();
    return `${JSON.stringify(openapiDocument(server.api, server.stream), null, 2)}\n`;
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
