/**
 * Leaves the user's account as it was before a run: removes the callbacks the run registered and
 * unpairs its blocks (the server then forgets their devices and readings). Used at the end of a run
 * with `--cleanup` (or `cleanup: true` in the scenario), also after Ctrl-C, and by
 * `blockkit sim cleanup --node-prefix P` for the leftovers of earlier runs. The calls are paced to
 * the server's limit per credential, and one answered 429 all the same is asked again after a wait.
 * A run's cleanup has a time bound of its own (`cleanup_timeout_s`): against a server that no
 * longer answers each call would otherwise wait its whole time limit, block after block.
 */
import { sleep } from "../gateway/agent/backoff.js";
import type { ApiClient } from "../protocol/api-client.js";
import { CredentialPacer } from "./fleet/pacer.js";

export interface CleanupResult {
  blocks: number;
  callbacks: number;
  /** `what: message` of every call that failed (a 404 is not a failure: already gone). */
  failed: string[];
  /**
   * Only when the time bound ran out: what was not cleaned up (not asked, or asked and abandoned
   * unanswered; the server may have done some of the latter). `blockkit sim cleanup` finishes it.
   */
  left?: { afterS: number; blocks: string[]; callbacks: string[]; by?: "timeout" | "quit" };
}

/**
 * A cleanup under way: what it has done so far and what it has not (not asked yet, or asked and not
 * answered). `blockkit sim` reads it at a second Ctrl-C during the cleanup, which quits at once, to
 * name what it leaves as the time bound does.
 */
export class CleanupProgress {
  readonly result: CleanupResult = { blocks: 0, callbacks: 0, failed: [] };
  /** Not done yet, in the order they are asked. */
  readonly blocks: Set<string>;
  readonly callbacks: Set<string>;
  private readonly startedAt = performance.now();

  constructor(nodeIds: readonly string[], callbackGuids: readonly string[]) {
    this.blocks = new Set(nodeIds);
    this.callbacks = new Set(callbackGuids);
  }

  /** The result so far, with what is not done as `left` (when anything is): `by` says what ended the cleanup. */
  snapshot(by: "timeout" | "quit", afterS = Math.round((performance.now() - this.startedAt) / 100) / 10): CleanupResult {
    const r: CleanupResult = { ...this.result, failed: [...this.result.failed] };
    if (this.blocks.size + this.callbacks.size > 0) r.left = { afterS, blocks: [...this.blocks], callbacks: [...this.callbacks], by };
    return r;
  }
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

/** `call`, paced; asked again after a wait while answered 429 (the user token is rate limited). Ends once `signal` aborts. */
async function paced(pacer: CredentialPacer, call: () => Promise<unknown>, signal: AbortSignal): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await pacer.take(signal);
    signal.throwIfAborted();
    try {
      await call();
      return;
    } catch (err) {
      if (signal.aborted || (err as { status?: number }).status !== 429 || attempt >= THROTTLED_TRIES) throw err;
      await sleep(250 * 2 ** attempt, signal);
    }
  }
}

/** The server's documented limit per credential (docs/api.md "Errors"), for a cleanup without a run. */
const DEFAULT_REQUESTS_PER_S = 1000;

/**
 * Removes the callbacks of `callbackGuids`, then unpairs `nodeIds`. `inFlight`: those of them whose
 * activation request was abandoned unanswered (Fleet.inFlightAtStop): one the server does not know
 * (404) may still be claimed after the cleanup, and is reported among the failures. `timeoutMs`:
 * the cleanup's bound; what is left after it is aborted and listed in the result's `left`.
 */
export async function cleanupFleet(
  api: ApiClient,
  what: { nodeIds: string[]; callbackGuids: string[]; inFlight?: readonly string[]; pacer?: CredentialPacer; timeoutMs?: number; progress?: CleanupProgress },
): Promise<CleanupResult> {
  const progress = what.progress ?? new CleanupProgress(what.nodeIds, what.callbackGuids);
  const result = progress.result;
  const pacer = what.pacer ?? new CredentialPacer(DEFAULT_REQUESTS_PER_S);
  const bound = new AbortController();
  const timer = what.timeoutMs === undefined ? undefined : setTimeout(() => bound.abort(), what.timeoutMs);
  const signal = bound.signal;
  const client = api.withSignal(signal);
  // What the bound cut short stays in the progress's sets: the `left` of the result.
  await each(what.callbackGuids, async (guid) => {
    if (signal.aborted) return;
    try {
      await paced(pacer, () => client.removeCallback(guid), signal);
      result.callbacks++;
    } catch (err) {
      if (signal.aborted) return;
      if (!gone(err)) result.failed.push(`callback of ${guid}: ${(err as Error).message}`);
    }
    progress.callbacks.delete(guid);
  });
  const inFlight = new Set(what.inFlight);
  await each(what.nodeIds, async (nodeId) => {
    if (signal.aborted) return;
    try {
      await paced(pacer, () => client.unpairBlock(nodeId), signal);
      result.blocks++;
    } catch (err) {
      if (signal.aborted) return;
      if (!gone(err)) result.failed.push(`block ${nodeId}: ${(err as Error).message}`);
      else if (inFlight.has(nodeId)) result.failed.push(`block ${nodeId}: its activation was still in flight at the stop; the server may claim it after this cleanup`);
    }
    progress.blocks.delete(nodeId);
  });
  clearTimeout(timer);
  return progress.snapshot("timeout", (what.timeoutMs ?? 0) / 1000);
}

/** What a cleanup's result says on stderr at the end of a run, `retry` being the command that finishes it. */
export function cleanupLines(c: CleanupResult, retry: string): string[] {
  const lines = [`cleanup: ${c.blocks} blocks unpaired, ${c.callbacks} callbacks removed${c.failed.length > 0 ? `, ${c.failed.length} failed` : ""}`];
  if (c.left) {
    const { blocks, callbacks } = c.left;
    const why = c.left.by === "quit" ? `quit at the second Ctrl-C after ${c.left.afterS} s` : `not finished within ${c.left.afterS} s (--cleanup-timeout)`;
    lines.push(`cleanup: ${why}: ${blocks.length} block${blocks.length === 1 ? "" : "s"} and ${callbacks.length} callback${callbacks.length === 1 ? "" : "s"} not cleaned up`);
    const names = [...blocks.map((n) => `block ${n}`), ...callbacks.map((g) => `callback of ${g}`)];
    for (const n of names.slice(0, 10)) lines.push(`cleanup left: ${n}`);
    if (names.length > 10) lines.push(`cleanup left: … and ${names.length - 10} more`);
  }
  for (const f of c.failed.slice(0, 10)) lines.push(`cleanup failed: ${f}`);
  if (c.left) lines.push(`finish it with: ${retry}`);
  else if (c.failed.length > 0) lines.push(`retry with: ${retry}`);
  return lines;
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
