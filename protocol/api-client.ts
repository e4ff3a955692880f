/**
 * The user-side API client (undici, loaded on first use): every user route of the spec, typed. The
 * credential is a personal `user_access_token` or an OAuth `access_token`, sent in the query as the
 * spec asks.
 * A response with `result: 0` or a non-2xx status rejects with an ApiError carrying the HTTP status
 * and the service's error text; the token never appears in an error message.
 */
import type { Dispatcher, request as undiciRequest } from "undici";
import type {
  BlockJson,
  CallbackJson,
  DataPoint,
  DeviceJson,
  HeartbeatRecord,
  HistoryParams,
  RuleBody,
  RuleJson,
  SubDeviceCreate,
  UserJson,
} from "./api-types.js";
import { retryAfterMs } from "./block-errors.js";
import type { Envelope } from "./envelope.js";

export interface ApiClientOptions {
  /** REST root including the version, e.g. `http://127.0.0.1:8000/rest/v0`. */
  baseUrl: string;
  /** Stream root for camera snapshots, e.g. `http://127.0.0.1:8001`. Default: derived from baseUrl's port + 1. */
  streamUrl?: string;
  token: string;
  /** `user` (query `user_access_token`, default) or `oauth` (query `access_token`). */
  tokenKind?: "user" | "oauth";
  /** undici dispatcher (connection pool, or a MockAgent in unit tests). Default: undici's global one. */
  dispatcher?: Dispatcher;
  /** Per-request time limit, ms. Default 35 000 (longer than the service's 30 s holds). */
  timeoutMs?: number;
  /** Ends every request of this client, in flight or later, once aborted (rejected with status 0). */
  signal?: AbortSignal;
}

export class ApiError extends Error {
  /** How long the server asked the caller to wait before it asks again (a 429's Retry-After), ms; null when it did not say. */
  readonly retryAfterMs: number | null;

  constructor(
    message: string,
    /** HTTP status; 0 when no response arrived. */
    readonly status: number,
    /** The service's `error` text when it answered with the envelope. */
    readonly serviceError: string | null = null,
    options?: { cause?: unknown; retryAfterMs?: number | null },
  ) {
    super(message, options);
    this.name = "ApiError";
    this.retryAfterMs = options?.retryAfterMs ?? null;
  }
}

type Query = Record<string, string | number | undefined>;

type Request = typeof undiciRequest<null>;
let undici: Promise<typeof import("undici")> | undefined;
/**
 * undici's request(), the module loaded on the first call: `blockkit gateway` shares the command
 * line's modules with these API commands, and undici alone is about 20 MB of RSS on the gateway's Pi.
 */
function request(...args: Parameters<Request>): ReturnType<Request> {
  undici ??= import("undici");
  return undici.then((m) => m.request(...args));
}
const enc = encodeURIComponent;

function defaultStream(baseUrl: string): string {
  const u = new URL(baseUrl);
  u.port = String(Number(u.port || (u.protocol === "https:" ? 443 : 80)) + 1);
  return u.origin;
}

export class ApiClient {
  private readonly base: string;
  private readonly stream: string;
  private readonly credential: string;

  constructor(private readonly options: ApiClientOptions) {
    if (!options.baseUrl) throw new TypeError("ApiClient: baseUrl is required");
    if (!options.token) throw new TypeError("ApiClient: token is required");
    this.base = options.baseUrl.replace(/\/+$/, "");
    this.stream = (options.streamUrl ?? defaultStream(this.base)).replace(/\/+$/, "");
    this.credential = options.tokenKind === "oauth" ? "access_token" : "user_access_token";
  }

  private url(root: string, path: string, query: Query | null = {}): string {
    if (query === null) return `${root}${path}`;
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, String(v));
    q.set(this.credential, this.options.token);
    return `${root}${path}?${q.toString()}`;
  }

  /** `query` null: no credential (the tickle path carries its own token). */
  private async call<T>(method: Dispatcher.HttpMethod, path: string, body?: unknown, query?: Query | null, signal?: AbortSignal): Promise<{ status: number; json: T }> {
    let res: Dispatcher.ResponseData;
    try {
      res = await request(this.url(this.base, path, query), {
        method,
        dispatcher: this.options.dispatcher,
        signal: signal ?? this.options.signal,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
        headersTimeout: this.options.timeoutMs ?? 35_000,
        bodyTimeout: this.options.timeoutMs ?? 35_000,
      });
    } catch (err) {
      throw new ApiError(`${method} ${path}: ${(err as Error).message}`, 0, null, { cause: err });
    }
    const text = await res.body.text();
    let json: unknown = undefined;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      throw new ApiError(`${method} ${path}: answered ${res.statusCode} with a body that is not JSON`, res.statusCode, null, {
        retryAfterMs: retryAfterMs(res.headers["retry-after"]),
      });
    }
    const env = json as Partial<Envelope> | undefined;
    if (res.statusCode >= 300 || (env && env.result === 0)) {
      const serviceError = env && typeof env.error === "string" ? env.error : null;
      throw new ApiError(`${method} ${path}: ${res.statusCode} ${serviceError ?? "failed"}`, res.statusCode, serviceError, {
        retryAfterMs: retryAfterMs(res.headers["retry-after"]),
      });
    }
    return { status: res.statusCode, json: json as T };
  }

  private async data<T>(method: Dispatcher.HttpMethod, path: string, body?: unknown, query?: Query): Promise<T> {
    return (await this.call<Envelope<T>>(method, path, body, query)).json.data as T;
  }

  private async done(method: Dispatcher.HttpMethod, path: string, body?: unknown, signal?: AbortSignal): Promise<void> {
    await this.call<Envelope>(method, path, body, undefined, signal);
  }

  /** This client with its requests ended once `signal` aborts (a caller with a time bound of its own). */
  withSignal(signal: AbortSignal): ApiClient {
    return new ApiClient({ ...this.options, signal });
  }

  /** GET /user: who the credential belongs to and the server's version (checks a token). */
  user(): Promise<UserJson> {
    return this.data("GET", "/user");
  }

  // Devices
  devices(): Promise<Record<string, DeviceJson>> {
    return this.data("GET", "/devices");
  }
  device(guid: string): Promise<DeviceJson> {
    return this.data("GET", `/device/${enc(guid)}`);
  }
  /** PUT /device/:guid: a command (`DA`) and/or a new title (`shortName`). */
  updateDevice(guid: string, body: { DA?: string; shortName?: string }, signal?: AbortSignal): Promise<void> {
    return this.done("PUT", `/device/${enc(guid)}`, body, signal);
  }
  /** Sends a command to a device (PUT with DA alone); `signal` ends the request once aborted. */
  actuate(guid: string, DA: string, signal?: AbortSignal): Promise<void> {
    return this.updateDevice(guid, { DA }, signal);
  }
  rename(guid: string, shortName: string): Promise<void> {
    return this.updateDevice(guid, { shortName });
  }
  deleteDevice(guid: string): Promise<void> {
    return this.done("DELETE", `/device/${enc(guid)}`);
  }
  heartbeat(guid: string): Promise<HeartbeatRecord> {
    return this.data("GET", `/device/${enc(guid)}/heartbeat`);
  }
  history(guid: string, params: HistoryParams = {}): Promise<DataPoint[]> {
    return this.data("GET", `/device/${enc(guid)}/data`, undefined, { ...params });
  }

  // Callbacks
  callback(guid: string): Promise<CallbackJson> {
    return this.data("GET", `/device/${enc(guid)}/callback`);
  }
  addCallback(guid: string, url: string): Promise<void> {
    return this.done("POST", `/device/${enc(guid)}/callback`, { url });
  }
  /** PUT: replaces the device's callback URL (creates it when there is none). */
  setCallback(guid: string, url: string): Promise<void> {
    return this.done("PUT", `/device/${enc(guid)}/callback`, { url });
  }
  removeCallback(guid: string): Promise<void> {
    return this.done("DELETE", `/device/${enc(guid)}/callback`);
  }

  // Sub-devices
  async addSubdevice(guid: string, body: SubDeviceCreate): Promise<{ id: string; token?: string }> {
    return this.data("POST", `/device/${enc(guid)}/subdevice`, body);
  }
  /** Resolves with `{token}` when the change made it a webhook sensor (its new tickle token, shown only here). */
  async updateSubdevice(guid: string, id: string, body: Partial<SubDeviceCreate>): Promise<{ token?: string }> {
    return (await this.data<{ token?: string } | undefined>("PUT", `/device/${enc(guid)}/subdevice/${enc(id)}`, body)) ?? {};
  }
  removeSubdevice(guid: string, id: string): Promise<void> {
    return this.done("DELETE", `/device/${enc(guid)}/subdevice/${enc(id)}`);
  }
  subdeviceHistory(guid: string, id: string, params: Omit<HistoryParams, "fn"> = {}): Promise<DataPoint[]> {
    return this.data("GET", `/device/${enc(guid)}/subdevice/${enc(id)}/data`, undefined, { ...params });
  }
  /** Actuates a webhook sub-device; authorised by the token in the path alone (no user credential is sent). */
  async tickle(guid: string, id: string, token: string): Promise<void> {
    await this.call<Envelope>("POST", `/device/${enc(guid)}/subdevice/${enc(id)}/tickle/${enc(token)}`, undefined, null);
  }

  // Blocks
  blocks(): Promise<Record<string, BlockJson>> {
    return this.data("GET", "/block");
  }
  block(nodeId: string): Promise<BlockJson> {
    return this.data("GET", `/block/${enc(nodeId)}`);
  }
  /** POST /block: claims a block that is awaiting activation (the user's leg of the two-legged flow). */
  claimBlock(nodeId: string): Promise<void> {
    return this.done("POST", "/block", { nodeid: nodeId });
  }
  unpairBlock(nodeId: string): Promise<void> {
    return this.done("DELETE", `/block/${enc(nodeId)}`);
  }
  /** The direct activation flow: claims the node for the user and returns its block token. */
  async activateDirect(nodeId: string): Promise<string> {
    const { json } = await this.call<{ token?: unknown }>("GET", `/block/${enc(nodeId)}/activate`);
    if (!json || typeof json.token !== "string") throw new ApiError(`activation of ${nodeId} answered without a token`, 200);
    return json.token;
  }

  // Rules
  rules(): Promise<RuleJson[]> {
    return this.data("GET", "/rule");
  }
  rule(rid: number | string): Promise<RuleJson> {
    return this.data("GET", `/rule/${enc(String(rid))}`);
  }
  async createRule(body: RuleBody): Promise<string> {
    const d = await this.data<{ rid: string | number }>("POST", "/rule", body);
    return String(d.rid);
  }
  updateRule(rid: number | string, body: RuleBody): Promise<void> {
    return this.done("PUT", `/rule/${enc(String(rid))}`, body);
  }
  deleteRule(rid: number | string): Promise<void> {
    return this.done("DELETE", `/rule/${enc(String(rid))}`);
  }
  suspendRule(rid: number | string): Promise<void> {
    return this.done("POST", `/rule/${enc(String(rid))}/suspend`);
  }
  unsuspendRule(rid: number | string): Promise<void> {
    return this.done("DELETE", `/rule/${enc(String(rid))}/suspend`);
  }

  // Camera
  /** GET {stream_url}/rest/v0/camera/:guid/snapshot: the JPEG bytes. */
  async snapshot(guid: string): Promise<Buffer> {
    const path = `/rest/v0/camera/${enc(guid)}/snapshot`;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(this.url(this.stream, path), { method: "GET", dispatcher: this.options.dispatcher });
    } catch (err) {
      throw new ApiError(`GET ${path}: ${(err as Error).message}`, 0, null, { cause: err });
    }
    const body = Buffer.from(await res.body.arrayBuffer());
    if (res.statusCode !== 200) {
      let serviceError: string | null = null;
      try {
        serviceError = (JSON.parse(body.toString("utf8")) as Envelope).error;
      } catch {
        serviceError = null;
      }
      throw new ApiError(`GET ${path}: ${res.statusCode} ${serviceError ?? "failed"}`, res.statusCode, serviceError);
    }
    return body;
  }
}
