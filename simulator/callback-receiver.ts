/**
 * The simulator's own callback receiver: a small HTTP server the simulator registers as the
 * callback URL of some devices. Each delivery `{GUID,G,V,D,DA,timestamp,node}` is timed from the
 * reading's timestamp to its arrival (both on the simulator's clock when the server is on the same
 * host; the reading carries the simulator's TIMESTAMP). A run without deliveries reports 0.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { CallbackDelivery } from "../protocol/api-types.js";
import type { Metrics } from "./metrics/metrics.js";

export interface CallbackReceiverOptions {
  /** Address to listen on. Default 127.0.0.1. */
  host?: string;
  /** Port; 0 (default) picks a free one. */
  port?: number;
  /** Host name the server should use to reach the receiver. Default: the listen host. */
  publicHost?: string;
  clock?: () => number;
}

const MAX_BODY = 64 * 1024;

function isDelivery(v: unknown): v is CallbackDelivery {
  if (v === null || typeof v !== "object") return false;
  const o = v as Record<string, unknown>;
  return typeof o.GUID === "string" && typeof o.timestamp === "number" && (typeof o.DA === "string" || typeof o.DA === "number");
}

export class CallbackReceiver {
  private server: Server | null = null;
  private base = "";
  /** Deliveries received per GUID (the report lists how many devices got any). */
  readonly perDevice = new Map<string, number>();

  constructor(
    private readonly metrics: Metrics,
    private readonly options: CallbackReceiverOptions = {},
  ) {}

  async start(): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    this.server = server;
    const host = this.options.host ?? "127.0.0.1";
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.options.port ?? 0, host, () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    const shown = this.options.publicHost ?? host;
    this.base = `http://${shown.includes(":") ? `[${shown}]` : shown}:${port}`;
  }

  /** The URL to register for a device. */
  urlFor(guid: string): string {
    if (!this.base) throw new Error("CallbackReceiver: start() first");
    return `${this.base}/callback/${encodeURIComponent(guid)}`;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const now = (this.options.clock ?? Date.now)();
    if (req.method !== "POST" || !req.url?.startsWith("/callback/")) {
      res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on("end", () => {
      let body: unknown;
      try {
        body = size > MAX_BODY ? null : JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        body = null;
      }
      if (!isDelivery(body)) {
        this.metrics.error("callback_bad_payload");
        res.writeHead(400, { "content-type": "text/plain" }).end("expected {GUID,G,V,D,DA,timestamp,node}");
        return;
      }
      this.metrics.callbackReceived(now - body.timestamp);
      this.perDevice.set(body.GUID, (this.perDevice.get(body.GUID) ?? 0) + 1);
      res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
    });
    req.on("error", () => res.destroy());
  }
}
