/** What links share: where readings go, the frame recorder, and link states for /metrics. */
import type { Reading } from "../agent/types.js";

/** Where a link hands readings (the BlockAgent implements it). */
export interface ReadingSink {
  submitMany(readings: Reading[], link?: string): number;
  /**
   * As submitMany, but `refused` when nothing could be stored (the outbox cannot write): a link
   * that acknowledges readings to its nodes (MQTT PUBACK) must then not acknowledge them.
   */
  store?(readings: Reading[], link?: string): number | "refused";
}

/** What became of a message a node published. */
export type Offered = "stored" | "refused" | "ignored";

/** Receives every frame that came from hardware (`--record`). */
export interface FrameRecorder {
  /** `frame` is the raw serial line or MQTT payload text; `topic` is set for MQTT. */
  record(link: string, frame: string, topic?: string): void;
}

export type LinkState = "down" | "opening" | "up";

/** The common face of a link for the daemon: lifecycle, state and counters. */
export interface Link {
  readonly name: string;
  readonly state: LinkState;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Counters for /metrics (monotonic). */
  counters(): Record<string, number>;
}
