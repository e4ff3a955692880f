/**
 * The block-side HTTP client: activation, heartbeat/data/config events, the commands long-poll and
 * the camera snapshot upload. Every non-2xx answer, and every call without one, becomes a
 * BlockClientError (./block-errors.ts, re-exported here) carrying the HTTP status and the server's
 * envelope message. The wire shapes of the calls and the reading of their answers are in
 * ./block-wire.ts (its types re-exported here).
 *
 * The exchange itself goes through a BlockTransport (./transport.ts): node:http by default (the
 * gateway), undici when a dispatcher is given (the simulator). undici is loaded only then.
 */
import { isNodeId } from "./guid.js";
import type { Dispatcher } from "undici";
import { answerError, BlockClientError, networkError, parseJson } from "./block-errors.js";
import { type PostCallbacks, PostOutcome, toCommand, type WireConfig, type WireReading } from "./block-wire.js";
import type { CommandsResponse, Command } from "./payloads.js";
import { type BlockTransport, NodeHttpTransport, type TransportRequest, type TransportResponse } from "./transport.js";

export { BlockClientError, retryAfterMs } from "./block-errors.js";
export type { PostCallbacks, WireConfig, WireReading } from "./block-wire.js";

export interface BlockClientOptions {
  /** REST root including `/rest/v0`, e.g. `http://127.0.0.1:8000/rest/v0`. */
  baseUrl: string;
  /** Camera host root (`{stream_url}`); snapshot uploads go to `{streamUrl}/rest/v0/camera/:guid/snapshot`. */
  streamUrl?: string;
  nodeId: string;
  /**
   * undici dispatcher (shared by many simulated blocks, or a mock in tests); loads undici on first
   * use. Default: a private node:http transport with up to 8 kept-alive connections.
   */
  dispatcher?: Dispatcher;
  /** A ready transport (takes precedence over `dispatcher`); it belongs to the caller, close() leaves it open. */
  transport?: BlockTransport;
  /** Timeout of ordinary calls, ms. Default 15 000. Held calls (activation, commands) use holdTimeoutMs. */
  timeoutMs?: number;
  /** Longest wait for a held call (activation, commands long-poll), ms. Default 75 000. */
  holdTimeoutMs?: number;
}

export class BlockClient {
  readonly nodeId: string;
  private readonly base: string;
  private readonly stream: string | undefined;
  private transport: BlockTransport | undefined;
  /** The token of the cached header objects (headersFor), and those objects by content type. */
  private headersToken: string | undefined;
  private readonly headerSets = new Map<string | undefined, Record<string, string>>();
  /** The last call's content type and headers (most calls repeat the previous one's). */
  private lastType: string | undefined;
  private lastHeaders: Record<string, string> | undefined;
  /** The undici transport while its module loads (a dispatcher was given). */
  private readonly loading: Promise<BlockTransport> | undefined;
  private readonly ownTransport: boolean;
  private readonly timeoutMs: number;
  private readonly holdTimeoutMs: number;
  /** The URLs of the block's events, made once. */
  private readonly eventUrls: Record<"data" | "heartbeat" | "config", string>;

  constructor(o: BlockClientOptions) {
    if (!/^https?:\/\//.test(o.baseUrl)) throw new TypeError(`BlockClient: baseUrl must be an http(s) URL, got "${o.baseUrl}"`);
    if (!isNodeId(o.nodeId)) throw new TypeError(`BlockClient: nodeId must be 12-64 alphanumerics, got "${o.nodeId}"`);
    this.nodeId = o.nodeId;
    this.base = o.baseUrl.replace(/\/+$/, "");
    this.stream = o.streamUrl?.replace(/\/+$/, "");
    this.ownTransport = o.transport === undefined && o.dispatcher === undefined;
    if (o.transport) this.transport = o.transport;
    else if (o.dispatcher) {
      const dispatcher = o.dispatcher;
      this.loading = import("./undici-transport.js").then((m) => new m.UndiciTransport(dispatcher));
      // Rejections reach the first call; this only keeps an unused client from an unhandled one.
      this.loading.catch(() => undefined);
    } else this.transport = new NodeHttpTransport({ maxSockets: 8, idleTimeoutMs: 60_000 });
    this.timeoutMs = o.timeoutMs ?? 15_000;
    this.holdTimeoutMs = o.holdTimeoutMs ?? 75_000;
    this.eventUrls = { data: this.blockUrl("data"), heartbeat: this.blockUrl("heartbeat"), config: this.blockUrl("config") };
  }

  /**
   * One activation request. Two-legged (no userToken): held by the server; null on 204 (ask again).
   * Direct: with a user access token, claims and answers at once.
   */
  async activate(opts: { userToken?: string; signal?: AbortSignal } = {}): Promise<string | null> {
    const q = opts.userToken ? `?user_access_token=${encodeURIComponent(opts.userToken)}` : "";
    const res = await this.call("GET", `${this.base}/block/${this.nodeId}/activate${q}`, {
      signal: opts.signal,
      hold: true,
      json: true,
    });
    if (res.status === 204) return null;
    const token = (res.json as { token?: unknown } | null)?.token;
    if (typeof token !== "string" || token.length === 0) throw new BlockClientError("activation answered without a token", res.status);
    return token;
  }

  /** POST /block/:node/heartbeat with an array of readings (1..1000). */
  heartbeat(token: string, readings: WireReading[], signal?: AbortSignal): Promise<void> {
    return this.post("heartbeat", token, readings, signal, readings.every((r) => r.KEY !== undefined));
  }

  /** POST /block/:node/data with one reading. */
  data(token: string, reading: WireReading, signal?: AbortSignal): Promise<void> {
    return this.post("data", token, reading, signal, reading.KEY !== undefined);
  }

  /**
   * data() and heartbeat() without promises, when the transport dispatches (the simulator's): the
   * outcome goes to `done`, never in the caller's turn. Ten thousand readings a second each saved
   * three promises and their reactions. Over a transport without dispatch(), the same through send().
   */
  dataTo(token: string, reading: WireReading, signal: AbortSignal | undefined, done: PostCallbacks): void {
    this.postTo("data", token, reading, signal, reading.KEY !== undefined, done);
  }

  heartbeatTo(token: string, readings: WireReading[], signal: AbortSignal | undefined, done: PostCallbacks): void {
    this.postTo("heartbeat", token, readings, signal, readings.every((r) => r.KEY !== undefined), done);
  }

  /** POST /block/:node/config with one config event. */
  config(token: string, event: WireConfig, signal?: AbortSignal): Promise<void> {
    return this.post("config", token, event, signal, event.KEY !== undefined);
  }

  /** One commands long-poll: resolves with the queued commands (possibly none) when the hold ends. */
  async commands(token: string, signal?: AbortSignal): Promise<Command[]> {
    const res = await this.call("GET", this.blockUrl("commands"), { token, signal, hold: true, json: true });
    const body = res.json as CommandsResponse | null;
    if (!body || !Array.isArray(body.DEVICE)) throw new BlockClientError("commands answer without a DEVICE array", res.status);
    return body.DEVICE.flatMap((c) => toCommand(c));
  }

  /** POST `{stream_url}/rest/v0/camera/:guid/snapshot` with a JPEG. */
  async snapshot(token: string, guid: string, image: Uint8Array, signal?: AbortSignal): Promise<void> {
    if (!this.stream) throw new BlockClientError("no stream_url configured for snapshot uploads", 0);
    const url = `${this.stream}/rest/v0/camera/${encodeURIComponent(guid)}/snapshot`;
    await this.call("POST", url, { token, raw: image, contentType: "image/jpeg", signal });
  }

  async close(): Promise<void> {
    if (this.ownTransport) await this.transport?.close();
  }

  /**
   * A block event's POST (data, heartbeat, config): call()'s request and errors without its async
   * frames, one promise on the transport's. The simulator's uplink sends one a reading, and the two
   * async layers (their promises and resumptions) were a tenth of its CPU per reading.
   */
  private post(what: "data" | "heartbeat" | "config", token: string, body: unknown, signal: AbortSignal | undefined, idempotent: boolean): Promise<void> {
    const url = this.eventUrls[what];
    const transport = this.transport;
    if (transport === undefined) return this.call("POST", url, { token, body, signal, idempotent }).then(nothing);
    let sent: Promise<TransportResponse>;
    try {
      const request = this.eventRequest(url, token, body, signal, idempotent);
      sent = transport.send(request);
    } catch (err) {
      return Promise.reject(networkError("POST", url, err));
    }
    return sent.then(
      (res) => {
        if (res.status < 200 || res.status >= 300) throw answerError("POST", url, res.status, res.body, res.headers["retry-after"]);
      },
      (err: unknown) => {
        throw networkError("POST", url, err);
      },
    );
  }

  /** The outcome adapters of postTo(), one per event kind, kept while the caller's callbacks are the same. */
  private readonly outcomes: Partial<Record<"data" | "heartbeat", PostOutcome>> = {};

  private postTo(what: "data" | "heartbeat", token: string, body: unknown, signal: AbortSignal | undefined, idempotent: boolean, done: PostCallbacks): void {
    const transport = this.transport;
    if (transport?.dispatch === undefined) {
      this.post(what, token, body, signal, idempotent).then(
        () => done.posted(),
        (err: unknown) => done.postFailed(err as BlockClientError),
      );
      return;
    }
    let outcome = this.outcomes[what];
    if (outcome === undefined || outcome.done !== done) outcome = this.outcomes[what] = new PostOutcome(this.eventUrls[what], done);
    let request: TransportRequest;
    try {
      request = this.eventRequest(outcome.url, token, body, signal, idempotent);
    } catch (err) {
      const failed = outcome;
      queueMicrotask(() => failed.failed(err as Error));
      return;
    }
    transport.dispatch(request, outcome);
  }

  /** A block event's POST request (data, heartbeat, config); throws when the body cannot be JSON. */
  private eventRequest(url: string, token: string, body: unknown, signal: AbortSignal | undefined, idempotent: boolean): TransportRequest {
    return { method: "POST", url, headers: this.headersFor(token, "application/json"), body: JSON.stringify(body), signal, timeoutMs: this.timeoutMs, idempotent };
  }

  /**
   * The headers of a call, the same frozen object for every call with the same token and content
   * type (a transport may cache what it derives from it: the simulator's writes the lines once).
   */
  private headersFor(token: string | undefined, contentType: string | undefined): Record<string, string> {
    if (token !== this.headersToken) {
      // A new token (an activation, a re-activation): the old one's headers go.
      this.headerSets.clear();
      this.headersToken = token;
      this.lastHeaders = undefined;
    } else if (this.lastHeaders !== undefined && contentType === this.lastType) return this.lastHeaders;
    let h = this.headerSets.get(contentType);
    if (!h) {
      const made: Record<string, string> = {};
      if (token) made["x-service-token"] = token;
      if (contentType) made["content-type"] = contentType;
      h = Object.freeze(made);
      this.headerSets.set(contentType, h);
    }
    this.lastType = contentType;
    this.lastHeaders = h;
    return h;
  }

  private blockUrl(what: string): string {
    return `${this.base}/block/${this.nodeId}/${what}`;
  }

  private async call(
    method: "GET" | "POST",
    url: string,
    o: { token?: string; body?: unknown; raw?: Uint8Array; contentType?: string; signal?: AbortSignal; hold?: boolean; json?: boolean; idempotent?: boolean },
  ): Promise<{ status: number; json: unknown }> {
    let body: string | Uint8Array | undefined;
    let contentType: string | undefined;
    if (o.raw) {
      body = o.raw;
      contentType = o.contentType ?? "application/octet-stream";
    } else if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      contentType = "application/json";
    }
    const headers = this.headersFor(o.token, contentType);
    let status: number;
    let answer: Buffer;
    let res: TransportResponse;
    try {
      this.transport ??= await this.loading;
      res = await (this.transport as BlockTransport).send({
        method,
        url,
        headers,
        body,
        signal: o.signal,
        timeoutMs: o.hold ? this.holdTimeoutMs : this.timeoutMs,
        // A snapshot upload has no idempotency key: never sent twice.
        idempotent: method === "GET" || o.idempotent === true,
      });
      status = res.status;
      answer = res.body;
    } catch (err) {
      throw networkError(method, url, err);
    }
    const ok = status >= 200 && status < 300;
    // The envelope of a reading's acknowledgement says nothing the status does not: read only
    // answers with content (activation, commands) and errors (for the server's message).
    if (ok && !o.json) return { status, json: null };
    if (ok) return { status, json: parseJson(answer) };
    throw answerError(method, url, status, answer, res.headers["retry-after"]);
  }
}

const nothing = (): void => {};
