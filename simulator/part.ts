/**
 * A part of a scenario: `--shard i/n` on one of n machines, and each process of `--workers N`.
 * Part `index` of `count` runs the blocks whose index i has i % count === index, under the node ids
 * and with the random streams those blocks have in the whole scenario (each block's streams derive
 * from the seed and its node id), so the parts together run exactly the scenario. Rates and counts
 * of the whole fleet (commands, callbacks, chaos, ramp-up) are shared out so that they add up.
 */
import { availableParallelism } from "node:os";
import type { FleetPart } from "./report.js";
import type { LoadedScenario } from "./scenario/parse.js";

/** `i/n` with 0 <= i < n; null when the text is not one. */
export function parsePart(text: string): FleetPart | null {
  const m = /^(\d{1,6})\/(\d{1,6})$/.exec(text);
  if (!m) return null;
  const index = Number(m[1]);
  const count = Number(m[2]);
  return count >= 1 && index < count ? { index, count } : null;
}

/** Worker `w` of `workers` on shard `shard`: a part of the whole scenario (see the module comment). */
export function workerPart(shard: FleetPart, w: number, workers: number): FleetPart {
  return { index: shard.index + shard.count * w, count: shard.count * workers };
}

/** Whether block `i` belongs to the part. */
export function inPart(part: FleetPart | null | undefined, i: number): boolean {
  return !part || i % part.count === part.index;
}

/** This part's share of `n` things spread over the parts (the shares add up to n). */
export function share(n: number, part: FleetPart): number {
  return Math.floor(n / part.count) + (part.index < n % part.count ? 1 : 0);
}

/** The scenario as one part runs it: the fleet-wide rates and counts shared out. */
export function scenarioPart(s: LoadedScenario, part: FleetPart | null | undefined): LoadedScenario {
  if (!part || part.count === 1) return s;
  return Object.freeze({
    ...s,
    ramp_up: { blocks_per_s: s.ramp_up.blocks_per_s / part.count, max_pending: Math.max(1, Math.ceil(s.ramp_up.max_pending / part.count)) },
    rate_limit: { requests_per_s: s.rate_limit.requests_per_s / part.count },
    commands: { rate: s.commands.rate / part.count },
    callbacks: { devices: share(s.callbacks.devices, part) },
    chaos: s.chaos.map((c) => ({ ...c, blocks: share(c.blocks, part) })).filter((c) => c.blocks > 0),
  });
}

/** How many blocks of a fleet of `total` the part runs. */
export function blocksInPart(total: number, part: FleetPart | null | undefined): number {
  return part ? share(total, part) : total;
}

/**
 * Blocks below which a process of its own is not worth starting. A worker is a Node process of its
 * own (about half a second and 60 MB to start) and a hundred blocks at one reading a second take a
 * few percent of a core, so a small fleet (a developer's `--blocks 20`) stays in one process, with
 * one PID for Ctrl-C and its stack traces, and any load test gets every core.
 */
export const BLOCKS_PER_WORKER = 100;

/**
 * Processes for a fleet of `blocks` (already one shard's): `--workers N` when given (at most one per
 * block), else the number of cores, but no more than one per BLOCKS_PER_WORKER blocks.
 */
export function workerCount(blocks: number, given: number | undefined, cores: number = availableParallelism()): number {
  if (given !== undefined) return Math.max(1, Math.min(given, blocks));
  return Math.max(1, Math.min(cores, Math.ceil(blocks / BLOCKS_PER_WORKER)));
}
