/**
 * What the block calls carry and how their answers are read: the events as sent on the wire, the
 * commands long-poll's answer made into commands, and a dispatched POST's outcome as a caller's
 * callbacks (PostOutcome). The client (block-client.ts) re-exports the types.
 */
import { answerError, type BlockClientError, networkError } from "./block-errors.js";
import type { Command } from "./payloads.js";
import type { TransportCallbacks, TransportResponse } from "./transport.js";

/** One event as sent on the wire: the payload schemas of protocol/payloads.ts plus TIMESTAMP/KEY. */
export interface WireReading {
  G: string;
  V: number;
  D: number;
  DA: string;
  /** Original reading time, epoch ms. */
  TIMESTAMP?: number;
  /** Idempotency key: the server stores a (node, KEY) once. */
  KEY?: string;
}
export interface WireConfig {
  G: string;
  V: number;
  D: number;
  type: string;
  DA?: string;
  TIMESTAMP?: number;
  KEY?: string;
}

/** Where a block event's POST ends (dataTo, heartbeatTo): one object a caller keeps for its calls. */
export interface PostCallbacks {
  /** A 2xx answer. */
  posted(): void;
  /** A non-2xx answer or no answer, as data()'s rejections. */
  postFailed(err: BlockClientError): void;
}

/** A transport's outcome as a POST's (PostCallbacks), for one URL and one caller's callbacks. */
export class PostOutcome implements TransportCallbacks {
  constructor(
    readonly url: string,
    readonly done: PostCallbacks,
  ) {}

  answered(res: TransportResponse): void {
    if (res.status >= 200 && res.status < 300) this.done.posted();
    else this.done.postFailed(answerError("POST", this.url, res.status, res.body, res.headers["retry-after"]));
  }

  failed(err: Error): void {
    this.done.postFailed(networkError("POST", this.url, err));
  }
}

/** A well-formed command, normalised (G and DA as strings); [] for anything else. */
export function toCommand(c: unknown): Command[] {
  if (typeof c !== "object" || c === null) return [];
  const o = c as Record<string, unknown>;
  if (!(typeof o.G === "string" || typeof o.G === "number") || typeof o.V !== "number" || typeof o.D !== "number") return [];
  const DA = typeof o.DA === "string" || typeof o.DA === "number" ? String(o.DA) : "";
  return [{ G: String(o.G), V: o.V, D: o.D, DA, GUID: typeof o.GUID === "string" ? o.GUID : "" }];
}
