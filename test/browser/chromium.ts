/** Chromium for the page tests: Debian's /usr/bin/chromium through playwright-core, a fresh profile, no traffic of its own. */
import { type BrowserContext, chromium } from "playwright-core";

const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

type ContextOptions = NonNullable<Parameters<typeof chromium.launchPersistentContext>[1]>;

/** A browser with its profile in `profileDir` (a folder of the test's own). */
export function launchChromium(profileDir: string, options: ContextOptions = {}): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profileDir, { executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS, ...options });
}
