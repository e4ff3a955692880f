/**
 * Leaves the user's account as it was before a run: removes the callbacks the run registered and
 * unpairs its blocks (the server then forgets their devices and readings). Used at the end of a run
 * with `--cleanup` (or `cleanup: true` in the scenario), also after Ctrl-C, and by
 * `blockkit sim cleanup --node-prefix P` for the leftovers of earlier runs. The calls are paced to
 * the server's limit per credential, and one answered 429 all the same is asked again after a wait.
 */
import type { ApiClient } from "../protocol/api-client.js";
import { CredentialPacer } from "./fleet/pacer.js";

export interface CleanupResult {
  blocks: number;
  callbacks: number;
  /** `what: message` of every call that failed (a 404 is not a failure: already gone). */
  failed: string[];
}

/** Calls at once against the server: enough to be quick, few enough not to flood it. */
const PARALLEL = 16;

async function each<T>(items: T[], run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await run(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker));
}

function gone(err: unknown): boolean {
  return (err as { status?: number }).status === 404;
}

/** Tries of one call answered 429 before it counts as failed; waits of 0.5, 1, 2, 4 s between. */
const THROTTLED_TRIES = 5;

/** `call`, paced; asked again after a wait while answered 429 (the user token is rate limited). */
async function paced(pacer: CredentialPacer, call: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await pacer.take();
    try {
      await call();
      return;
    } catch (err) {
      if ((err as { status?: number }).status !== 429 || attempt >= THROTTLED_TRIES) throw err;
      await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
    }
  }
}

/** The server's documented limit per credential (docs/api.md "Errors"), for a cleanup without a run. */
const DEFAULT_REQUESTS_PER_S = 1000;

/**
 * Removes the callbacks of `callbackGuids`, then unpairs `nodeIds`. `inFlight`: those of them whose
 * activation request was abandoned unanswered (Fleet.inFlightAtStop): one the server does not know
 * (404) may still be claimed after the cleanup, and is reported among the failures.
 */
export async function cleanupFleet(
  api: ApiClient,
  what: { nodeIds: string[]; callbackGuids: string[]; inFlight?: readonly string[]; pacer?: CredentialPacer },
): Promise<CleanupResult> {
  const result: CleanupResult = { blocks: 0, callbacks: 0, failed: [] };
  const pacer = what.pacer ?? new CredentialPacer(DEFAULT_REQUESTS_PER_S);
  await each(what.callbackGuids, async (guid) => {
    try {
      await paced(pacer, () => api.removeCallback(guid));
      result.callbacks++;
    } catch (err) {
      if (!gone(err)) result.failed.push(`callback of ${guid}: ${(err as Error).message}`);
    }
  });
  const inFlight = new Set(what.inFlight);
  await each(what.nodeIds, async (nodeId) => {
    try {
      await paced(pacer, () => api.unpairBlock(nodeId));
      result.blocks++;
    } catch (err) {
      if (!gone(err)) result.failed.push(`block ${nodeId}: ${(err as Error).message}`);
      else if (inFlight.has(nodeId)) result.failed.push(`block ${nodeId}: its activation was still in flight at the stop; the server may claim it after this cleanup`);
    }
  });
  return result;
}

/**
 * The user's blocks whose node id starts with `prefix`: their devices' callbacks are removed (a
 * device without one answers 404, which is fine) and the blocks unpaired.
 */
export async function cleanupPrefix(api: ApiClient, prefix: string): Promise<CleanupResult> {
  if (prefix.length === 0) throw new TypeError("cleanupPrefix: an empty prefix would remove every block");
  const nodeIds = Object.keys(await api.blocks()).filter((n) => n.startsWith(prefix));
  const mine = new Set(nodeIds);
  const devices = Object.keys(await api.devices()).filter((guid) => mine.has(guid.split("_")[0] as string));
  const result = await cleanupFleet(api, { nodeIds, callbackGuids: devices });
  return result;
}

/** The fixed start of a node-id pattern (`SIM{seed}N{index:8}` with seed 7 -> `SIM7N`). */
export function nodePrefix(pattern: string, seed: number): string {
  const fixed = pattern.replace(/\{seed\}/g, String(seed));
  const cut = fixed.indexOf("{");
  return cut < 0 ? fixed : fixed.slice(0, cut);
}
