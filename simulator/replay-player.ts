/**
 * Plays a recording through a real BlockAgent as one virtual block (direct activation with the
 * user token), at the recorded pace divided by `speed`. Commands sent to the block are applied by a
 * virtual link that reports the new value back, as the hardware would. The block's backoff waits
 * after failures are the seed's (as a `blockkit sim` block's of the same node id and seed).
 */
import { type BackoffLoop, BlockAgent, type CommandTarget } from "../gateway/agent/index.js";
import type { Command } from "../protocol/payloads.js";
import { SimBlockClient } from "./fleet/client.js";
import { MeasuredOutbox, SimTokenStore } from "./fleet/memory.js";
import { fleetTransport } from "./fleet/transport.js";
import type { LatencySummary } from "./metrics/histogram.js";
import { Metrics } from "./metrics/metrics.js";
import { blockJitter, Random } from "./random.js";
import type { ReplayEntry } from "./replay.js";

/** The longest wait for the readings sent when the playback is ended early (Ctrl-C), ms. */
export const REPLAY_STOP_DRAIN_MS = 3000;

export interface ReplayOptions {
  baseUrl: string;
  streamUrl?: string;
  token: string;
  nodeId: string;
  entries: ReplayEntry[];
  /** Pace multiplier: 2 plays twice as fast; 0 sends everything at once. Default 1. */
  speed?: number;
  /** Longest wait for the outbox to drain at the end, ms. Default 15 000. */
  drainTimeoutMs?: number;
  /** Ends the playback early (Ctrl-C): what was sent is drained (up to REPLAY_STOP_DRAIN_MS) and reported. */
  signal?: AbortSignal;
  /** The seed of the block's backoff jitter. Default 1 (as `blockkit sim`'s). */
  seed?: number;
  /** The agent's waits after a failure (a seam for tests). Default: a timer. */
  sleep?: (ms: number, signal: AbortSignal, loop: BackoffLoop) => Promise<void>;
  onProgress?: (played: number, total: number) => void;
}

export interface ReplayResult {
  nodeId: string;
  frames: number;
  sent: number;
  acked: number;
  errors: number;
  errors_by_kind: Record<string, number>;
  commands_received: number;
  ingest_ms: LatencySummary;
  /** Whether the playback was ended early (the signal): `frames` not all played, or their drain cut short. */
  interrupted: boolean;
  played: number;
}

/**
 * Times each reading from the moment it entered the outbox (an --instant reading's own time is
 * spread, see below), and tells when none is left waiting for its acknowledgement (drained()).
 */
export class SubmitTimedOutbox extends MeasuredOutbox {
  readonly submitted = new Map<string, number>();
  private readonly waiters = new Set<() => void>();

  override append(entries: Parameters<MeasuredOutbox["append"]>[0]): number {
    const now = Date.now();
    for (const e of entries) this.submitted.set(e.key, now);
    return super.append(entries);
  }

  override ack(ids: number[]): void {
    super.ack(ids);
    this.settle();
  }

  override expire(now: number): number {
    const n = super.expire(now);
    this.settle();
    return n;
  }

  private settle(): void {
    if (this.rows === 0) for (const done of [...this.waiters]) done();
  }

  /**
   * Resolves once no reading waits for its acknowledgement, or after `ms` at most; once `signal`
   * aborts (Ctrl-C, also before the call), after `stopMs` more at most.
   */
  drained(ms: number, signal?: AbortSignal, stopMs = ms): Promise<void> {
    if (this.rows === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const deadline = Date.now() + ms;
      let timer: NodeJS.Timeout | undefined;
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener("abort", bound);
        resolve();
      };
      // (Again at the abort: the bound shrinks to stopMs from then.)
      function bound(): void {
        clearTimeout(timer);
        timer = setTimeout(done, Math.max(0, Math.min(deadline - Date.now(), signal?.aborted ? stopMs : ms)));
      }
      bound();
      this.waiters.add(done);
      if (!signal?.aborted) signal?.addEventListener("abort", bound, { once: true });
    });
  }
}

export async function playRecording(o: ReplayOptions): Promise<ReplayResult> {
  const metrics = new Metrics();
  const http = fleetTransport(4, 1);
  const outbox: SubmitTimedOutbox = new SubmitTimedOutbox((entries, now) => {
    for (const e of entries) {
      metrics.acked(now - (outbox.submitted.get(e.key) ?? e.ts));
      outbox.submitted.delete(e.key);
    }
  });
  const client = new SimBlockClient(
    { baseUrl: o.baseUrl, streamUrl: o.streamUrl, nodeId: o.nodeId, transport: http.transport },
    { error: (kind) => metrics.error(kind), throttled: (kind) => metrics.throttled(kind) },
  );
  const agent = new BlockAgent({
    nodeId: o.nodeId,
    client,
    outbox,
    tokens: new SimTokenStore(),
    userToken: o.token,
    jitter: blockJitter(new Random(o.seed ?? 1), o.nodeId),
    sleep: o.sleep,
  });
  const link: CommandTarget = {
    name: "replay",
    owns: () => true,
    deliver: (cmd: Command) => {
      metrics.commandReceived(0);
      if (cmd.D !== 1004) metrics.sent(agent.submitMany([{ G: cmd.G, V: cmd.V, D: cmd.D, DA: cmd.DA, kind: "data" }], "replay"));
      return Promise.resolve();
    },
  };
  agent.addLink(link);
  agent.on("rejected", () => metrics.error("uplink_rejected"));
  const activated = new Promise<void>((resolve) => agent.once("activated", () => resolve()));
  await agent.start();
  // Ctrl-C during the activation (a server that does not answer) ends the playback too.
  const stopped = new Promise<void>((resolve) => {
    if (o.signal?.aborted) resolve();
    o.signal?.addEventListener("abort", () => resolve(), { once: true });
  });
  await Promise.race([activated, stopped]);
  const speed = o.speed ?? 1;
  const t0 = Date.now();
  // Sent at once, the readings still get distinct times in their recorded order: one millisecond
  // apart, the last one now (not all the same moment, which a chart would draw as one point).
  const total = o.entries.reduce((n, e) => n + e.readings.length, 0);
  let stamp = t0 - total;
  let played = 0;
  try {
    for (const e of o.entries) {
      if (o.signal?.aborted) break;
      const due = speed > 0 ? t0 + e.at / speed : t0;
      const wait = due - Date.now();
      if (wait > 0) await pause(wait, o.signal);
      if (o.signal?.aborted) break;
      const readings = speed > 0 ? e.readings : e.readings.map((r) => ({ ...r, ts: ++stamp }));
      metrics.sent(agent.submitMany(readings, e.link));
      played++;
      o.onProgress?.(played, o.entries.length);
    }
    // A Ctrl-C during the drain cuts it to REPLAY_STOP_DRAIN_MS, as its stopping line says.
    await outbox.drained(o.drainTimeoutMs ?? 15_000, o.signal, REPLAY_STOP_DRAIN_MS);
  } finally {
    await agent.stop();
    await http.close().catch(() => undefined);
  }
  const snap = metrics.snapshot();
  return {
    nodeId: o.nodeId,
    frames: o.entries.length,
    sent: snap.counters.events_sent,
    acked: snap.counters.events_acked,
    errors: snap.counters.errors,
    errors_by_kind: snap.errors_by_kind,
    commands_received: snap.counters.commands_received,
    ingest_ms: snap.ingest,
    interrupted: played < o.entries.length || o.signal?.aborted === true,
    played,
  };
}

/** Waits `ms`, or less when the signal ends the playback. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
