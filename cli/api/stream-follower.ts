/**
 * Follows the server's live stream (protocol/stream.ts) over a WebSocket (ws) and keeps following
 * it: a socket that closes or cannot connect is opened again after a backoff (0.5 s, doubling, at
 * most 30 s; back to 0.5 s once a socket opened), and each loss and reconnection is reported. A
 * refused credential (401/403 at the handshake) ends it instead: asking again cannot help.
 */
import WebSocket from "ws";
import { type StreamFrame, parseStreamFrame } from "../../protocol/stream.js";

export interface FollowerOptions {
  /** The stream's `ws://` address, credential included (protocol/stream.ts streamAddress()). */
  url: string;
  onFrame(frame: StreamFrame): void;
  /** Connection news, one line each: connected, lost and retrying, reconnected. */
  onStatus(line: string): void;
  /** The stream was refused for good (bad credential): called once, the follower is stopped. */
  onFatal(err: Error): void;
  /** First retry delay, ms (default 500); doubles up to `maxBackoffMs` (default 30 000). */
  backoffMs?: number;
  maxBackoffMs?: number;
}

/** The address without its query (where the credential is), for messages. */
export function safeAddress(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname}`;
}

export class StreamFollower {
  private socket: WebSocket | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private connectedOnce = false;
  private delay: number;

  constructor(private readonly options: FollowerOptions) {
    this.delay = options.backoffMs ?? 500;
  }

  start(): void {
    this.stopped = false;
    this.connect();
  }

  /** Closes the socket and cancels a pending retry; resolves once the socket is closed. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const socket = this.socket;
    this.socket = null;
    if (!socket || socket.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      socket.once("close", () => resolve());
      if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
      else socket.close(1000);
    });
  }

  private connect(): void {
    const where = safeAddress(this.options.url);
    const socket = new WebSocket(this.options.url, { handshakeTimeout: 10_000 });
    this.socket = socket;
    let failure: Error | null = null;
    socket.on("open", () => {
      this.options.onStatus(this.connectedOnce ? `reconnected to ${where}` : `following ${where} (Ctrl-C to stop)`);
      this.connectedOnce = true;
      this.delay = this.options.backoffMs ?? 500;
    });
    socket.on("message", (data, isBinary) => {
      if (isBinary) return;
      let frame: StreamFrame;
      try {
        frame = parseStreamFrame(Buffer.isBuffer(data) ? data.toString("utf8") : String(data));
      } catch (err) {
        this.options.onStatus(`ignored a frame: ${(err as Error).message}`);
        return;
      }
      this.options.onFrame(frame);
    });
    socket.on("error", (err) => {
      failure = err;
    });
    socket.on("close", (code) => {
      if (this.socket !== socket) return;
      this.socket = null;
      if (this.stopped) return;
      const status = /Unexpected server response: (\d+)/.exec(failure?.message ?? "")?.[1];
      if (status === "401" || status === "403") {
        this.stopped = true;
        this.options.onFatal(new Error(`the server refused the stream (${status}): check the token`));
        return;
      }
      const why = failure ? failure.message.replace(/^Unexpected server response: /, "answered ") : `closed (${code})`;
      const wait = this.delay;
      this.delay = Math.min(this.delay * 2, this.options.maxBackoffMs ?? 30_000);
      this.options.onStatus(`${this.connectedOnce ? "connection lost" : "cannot connect"}: ${why}; reconnecting in ${wait < 1000 ? `${wait} ms` : `${wait / 1000} s`}`);
      this.timer = setTimeout(() => {
        this.timer = null;
        if (!this.stopped) this.connect();
      }, wait);
    });
  }
}
