/**
 * The block transport over an undici dispatcher: the simulator shares one dispatcher among
 * thousands of simulated blocks (see simulator/fleet/dispatcher.ts). BlockClient imports this
 * module only when it is given a dispatcher, so that the gateway never loads undici.
 */
import { type Dispatcher, request } from "undici";
import type { BlockTransport, TransportRequest, TransportResponse } from "./transport.js";

export class UndiciTransport implements BlockTransport {
  /** The dispatcher belongs to the caller: close() leaves it open. */
  constructor(private readonly dispatcher: Dispatcher) {
    if (!dispatcher || typeof dispatcher.dispatch !== "function") throw new TypeError("UndiciTransport: dispatcher must be an undici Dispatcher");
  }

  async send(r: TransportRequest): Promise<TransportResponse> {
    const res = await request(r.url, {
      method: r.method,
      headers: r.headers,
      body: r.body,
      dispatcher: this.dispatcher,
      signal: r.signal,
      headersTimeout: r.timeoutMs,
      bodyTimeout: r.timeoutMs,
    });
    const max = r.maxBytes ?? Infinity;
    const declared = Number(res.headers["content-length"] ?? 0);
    if (declared > max) {
      res.body.destroy();
      throw new Error(`the answer of ${declared} bytes is over the limit of ${max} bytes`);
    }
    if (max === Infinity) return { status: res.statusCode, headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()) };
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > max) {
        res.body.destroy();
        throw new Error(`the answer is over the limit of ${max} bytes`);
      }
      chunks.push(chunk);
    }
    return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks, size) };
  }

  async close(): Promise<void> {
    // Nothing of its own to close.
  }
}
