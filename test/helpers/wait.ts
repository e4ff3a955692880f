/**
 * The one bounded wait of the tests, on vitest's `vi.waitFor`: for a condition another party makes
 * true (a held request reaching the server, a reading arriving over a pty). Never a sleep.
 */
import { vi } from "vitest";

/**
 * Calls `check` every `intervalMs` until it returns a truthy value and resolves with that value;
 * a check that throws counts as not yet. Rejects after `timeoutMs` with an error naming `what`
 * (and the check's last error, if any).
 */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 10_000, intervalMs = 20): Promise<NonNullable<T>> {
  let last: unknown;
  try {
    return await vi.waitFor(
      async () => {
        let v: T;
        try {
          v = await check();
        } catch (err) {
          last = err;
          throw err;
        }
        if (!v) throw new Error(`not yet: ${what}`);
        return v as NonNullable<T>;
      },
      { timeout: timeoutMs, interval: intervalMs },
    );
  } catch {
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ""}`);
  }
}
