/**
 * What a callback delivery sends (DESIGN.md "Callbacks"): the JSON body `{GUID,G,V,D,DA,timestamp,node}`,
 * signed with HMAC-SHA256 of the body keyed with the callback's secret, in one POST through a
 * keep-alive pool that the dispatcher's one stop signal aborts. Queues, fairness and retries are the
 * dispatcher's (callbacks.ts, callback-shares.ts).
 */
import { createHmac } from "node:crypto";
import type { Logger } from "pino";
import { Agent, type Dispatcher } from "undici";
import { type CallbackPayload, DELIVERY_HEADER, SIGNATURE_HEADER } from "../../../protocol/automation.js";
import { shownDA } from "../devices.js";
import type { OutboundPolicy } from "../outbound-policy.js";

/** OutboundRefusedError's code (not imported: that module loads undici's connector machinery here too). */
const OUTBOUND_REFUSED = "BLOCKKIT_OUTBOUND_REFUSED";

/** `sha256=<hex>`: what receivers compare (constant-time) with their own HMAC of the raw body. */
export function signature(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/** The JSON body of a delivery. */
export function payloadBody(guid: string, G: string, V: number, D: number, DA: string, ts: number, node: string): string {
  const payload: CallbackPayload = { GUID: guid, G, V, D, DA: shownDA({ v: V, d: D, last_da: DA }) ?? DA, timestamp: ts, node };
  return JSON.stringify(payload);
}

/** One delivery: its id (the delivery header), body and the attempts made so far. */
export interface Delivery {
  id: string;
  body: string;
  attempts: number;
  /** Why the last attempt failed (`HTTP 500`, `connect ECONNREFUSED …`), for the log line of a drop. */
  lastError?: string;
  /** The last attempt was refused by the outbound policy (OutboundRefusedError): not worth a retry. */
  refused?: boolean;
}

export class CallbackSender {
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;

  constructor(
    private readonly log: Logger,
    private readonly signal: AbortSignal,
    private readonly timeoutMs: number,
    options: { dispatcher?: Dispatcher; policy?: OutboundPolicy },
  ) {
    this.ownsDispatcher = options.dispatcher === undefined;
    this.dispatcher =
      options.dispatcher ??
      options.policy?.agent({ connections: 64, keepAliveTimeout: 10_000, connectTimeoutMs: timeoutMs }) ??
      new Agent({ connections: 64, keepAliveTimeout: 10_000, connect: { timeout: timeoutMs } });
  }

  /** Nothing to start: the pool connects on first use. */
  start(): void {}

  /** Closes the pool when this sender made it. */
  async stop(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close();
  }

  /**
   * One POST. Leaner than http-out's send(): the hot path of the benchmark. undici's own limits
   * bound it (connect in the Agent, headers and body here), and the dispatcher's one stop signal
   * aborts it, so no timer or controller is made per delivery.
   */
  async attempt(url: string, secret: string, item: Delivery): Promise<boolean> {
    try {
      const u = new URL(url);
      const res = await this.dispatcher.request({
        origin: u.origin,
        path: `${u.pathname}${u.search}`,
        method: "POST",
        body: item.body,
        headers: {
          "content-type": "application/json",
          "user-agent": "blockkit-callbacks",
          [SIGNATURE_HEADER]: signature(secret, item.body),
          [DELIVERY_HEADER]: item.id,
        },
        signal: this.signal,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
      await res.body.dump();
      if (res.statusCode >= 200 && res.statusCode <= 299) return true;
      item.lastError = `HTTP ${res.statusCode}`;
      this.log.debug({ status: res.statusCode, attempt: item.attempts }, "callback receiver refused a delivery");
    } catch (err) {
      item.lastError = (err as Error).message;
      item.refused = (err as { code?: unknown }).code === OUTBOUND_REFUSED;
      this.log.debug({ err: (err as Error).message, attempt: item.attempts }, "callback delivery failed");
    }
    return false;
  }
}
