/**
 * What a simulator run is given (SimOptions) and the phases it goes through, with the warning the
 * runner logs at start when the scenario asks more of the user token than the server's limit per
 * credential allows. Apart from runner.ts (the controller) so that what a run may be asked reads
 * on its own; the CLI, the TUI, the status and the workers take these types from runner.ts.
 */
import type { EventLog } from "./event-log.js";
import type { ShortCallClient } from "./fleet/transport.js";
import type { FleetPart } from "./report.js";
import type { LoadedScenario } from "./scenario/parse.js";

export type RunPhase = "starting" | "ramping" | "warmup" | "running" | "draining" | "done";

/** What the drain adds for callback deliveries when callbacks are registered (they come within about a second of the data), ms. */
export const CALLBACK_DRAIN_MS = 1500;

export interface SimOptions {
  scenario: LoadedScenario;
  /** REST root including /rest/v0. */
  baseUrl: string;
  streamUrl?: string;
  /** Several servers of one cluster: blocks are spread round robin over them (the first takes the user's API calls). */
  targets?: { baseUrl: string; streamUrl?: string }[];
  /** Run only this part of the scenario (--shard, --workers; simulator/part.ts). */
  part?: FleetPart | null;
  /** The user access token: direct activation, command PUTs, callbacks, claims. */
  token: string;
  /** Address of the callback receiver. Default 127.0.0.1, port 0. */
  callbackHost?: string;
  callbackPort?: number;
  /** Host name the server uses to reach the receiver. Default: callbackHost. */
  callbackPublicHost?: string;
  /** Longest wait for outboxes to drain at the end, ms. Default 15 000. */
  drainTimeoutMs?: number;
  clock?: () => number;
  /** The client of the blocks' readings and uploads (`--transport`). Default "http1": the simulator's own. */
  transport?: ShortCallClient;
}

/** Says so when the scenario asks more of the user token than the server's limit allows (rate_limit). */
export function warnOverLimit(s: LoadedScenario, log: EventLog): void {
  const limit = s.rate_limit.requests_per_s;
  if (limit <= 0) return;
  const per = `the user token's ${round(limit)} requests/s (rate_limit.requests_per_s, the server's limit per credential)`;
  if (s.ramp_up.blocks_per_s > limit && s.blocks.two_legged < s.blocks.count) {
    log.add("info", `ramp_up.blocks_per_s ${round(s.ramp_up.blocks_per_s)} is above ${per}: direct activations go at ${round(limit)}/s`);
  }
  if (s.commands.rate > limit) log.add("warn", `commands.rate ${round(s.commands.rate)}/s is above ${per}: commands are sent at ${round(limit)}/s at most`);
}

/** A rate for a log line: whole, or two decimals for a shard's share. */
function round(n: number): number {
  return Math.round(n * 100) / 100;
}
