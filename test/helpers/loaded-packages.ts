/**
 * Preload for tests of a child process's footprint (`node --import tsx --import <this file> …`):
 * when the process exits, writes `LOADED_PACKAGES <name> <name> …` on stderr, the npm packages it
 * loaded through the CommonJS loader (which also holds CommonJS packages imported from ESM, such as
 * undici, pino, mqtt and better-sqlite3; ESM-only packages such as aedes do not show).
 */
import Module from "node:module";

process.on("exit", () => {
  const cache = (Module as unknown as { _cache: Record<string, unknown> })._cache;
  const names = new Set<string>();
  for (const file of Object.keys(cache)) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
    if (m?.[1]) names.add(m[1]);
  }
  process.stderr.write(`LOADED_PACKAGES ${[...names].sort().join(" ")}\n`);
});
