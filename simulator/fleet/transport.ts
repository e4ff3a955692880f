/**
 * The fleet's HTTP connections, shared by all its blocks. Held calls (the commands long-poll and
 * activation) each keep a connection busy for up to 30 s, so they go to an undici agent without a
 * cap on connections; short calls (readings, snapshots) share a small pool of always-free
 * connections. Mixing them in one pool would have the short calls scan past ten thousand busy
 * long-poll connections to find a free one.
 *
 * Short calls to a plain-http server go through the lean HTTP/1.1 client
 * (protocol/http1-transport.ts), pipelined: the calls of one tick share a connection and leave in
 * one write. At ten thousand readings a second, undici's dispatch path was two thirds of the
 * simulator's CPU per event, and a write per request a fifth of it. Short calls to an https server
 * go through a second undici agent with as many connections (not pipelined).
 */
import { Agent } from "undici";
import { Http1Transport } from "../../protocol/http1-transport.js";
import type { BlockTransport, TransportRequest, TransportResponse } from "../../protocol/transport.js";
import { UndiciTransport } from "../../protocol/undici-transport.js";

export interface FleetTransport {
  transport: BlockTransport;
  close(): Promise<void>;
}

const HELD = /\/(commands|activate)(\?|$)/;

/** Kept-alive connections for the blocks' short calls (readings, snapshots). */
export const SHORT_CONNECTIONS = 32;
/** Short calls in flight on one of them at most (HTTP/1.1 pipelining). */
export const PIPELINING = 8;

export function fleetTransport(shortConnections = SHORT_CONNECTIONS, pipelining = PIPELINING): FleetTransport {
  const held = new Agent({ keepAliveTimeout: 60_000, connections: null, pipelining: 1 });
  const secure = new Agent({ keepAliveTimeout: 60_000, connections: shortConnections, pipelining: 1 });
  const lean = new Http1Transport({ connections: shortConnections, pipelining });
  const router = new Router(new UndiciTransport(held), lean, new UndiciTransport(secure));
  return {
    transport: router,
    close: async () => {
      await Promise.all([held.close(), secure.close(), lean.close()]);
    },
  };
}

/** Sends held calls to one transport and short ones to another; closing is the owner's (above). */
class Router implements BlockTransport {
  constructor(
    private readonly held: BlockTransport,
    private readonly lean: BlockTransport,
    private readonly secure: BlockTransport,
  ) {}

  send(r: TransportRequest): Promise<TransportResponse> {
    if (HELD.test(r.url)) return this.held.send(r);
    return r.url.startsWith("http://") ? this.lean.send(r) : this.secure.send(r);
  }

  async close(): Promise<void> {
    // The fleet closes the transports it made (fleetTransport's close).
  }
}
