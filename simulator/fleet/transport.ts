/**
 * The fleet's HTTP connections, shared by all its blocks. Held calls (the commands long-poll and
 * activation) each keep a connection busy for up to 30 s, so they go to undici clients without a
 * cap on connections (held-pool.ts: the free ones on a stack); short calls (readings, snapshots) share a small pool of always-free
 * connections. Mixing them in one pool would have the short calls scan past ten thousand busy
 * long-poll connections to find a free one.
 *
 * Short calls to a plain-http server go through the simulator's own HTTP/1.1 client
 * (simulator/transport/), pipelined: the calls of one tick share a connection and leave in one
 * write. At ten thousand readings a second, undici's dispatch path was two thirds of the
 * simulator's CPU per event, and a write per request a fifth of it. With `kind` "undici"
 * (`blockkit sim --transport undici`) they go through an undici agent with as many connections
 * instead, as do short calls to an https server in either case.
 */
import { Agent } from "undici";
import { type BlockTransport, type TransportCallbacks, type TransportRequest, type TransportResponse, dispatchTo } from "../../protocol/transport.js";
import { UndiciTransport } from "../../protocol/undici-transport.js";
import { Http1Transport } from "../transport/http1-transport.js";
import { HeldPool } from "./held-pool.js";

export interface FleetTransport {
  transport: BlockTransport;
  close(): Promise<void>;
}

/** The client of the blocks' short calls: the simulator's own HTTP/1.1 client, or undici. */
export type ShortCallClient = "http1" | "undici";
export const SHORT_CALL_CLIENTS: readonly ShortCallClient[] = ["http1", "undici"];

const HELD = /\/(commands|activate)(\?|$)/;

/** Kept-alive connections for the blocks' short calls (readings, snapshots). */
export const SHORT_CONNECTIONS = 32;
/** Short calls in flight on one of them at most (HTTP/1.1 pipelining). */
export const PIPELINING = 8;

export function fleetTransport(shortConnections = SHORT_CONNECTIONS, pipelining = PIPELINING, kind: ShortCallClient = "http1"): FleetTransport {
  if (!SHORT_CALL_CLIENTS.includes(kind)) throw new TypeError(`fleetTransport: kind must be one of ${SHORT_CALL_CLIENTS.join(", ")}, got ${String(kind)}`);
  const held = new HeldPool({ keepAliveTimeout: 60_000 });
  const secure = new Agent({ keepAliveTimeout: 60_000, connections: shortConnections, pipelining: 1 });
  const lean = kind === "http1" ? new Http1Transport({ connections: shortConnections, pipelining }) : null;
  const router = new Router(new UndiciTransport(held), lean ?? new UndiciTransport(secure), new UndiciTransport(secure));
  return {
    transport: router,
    close: async () => {
      await Promise.all([held.close(), secure.close(), lean?.close()]);
    },
  };
}

/** Sends held calls to one transport and short ones to another; closing is the owner's (above). */
class Router implements BlockTransport {
  constructor(
    private readonly held: BlockTransport,
    private readonly plain: BlockTransport,
    private readonly secure: BlockTransport,
  ) {}

  send(r: TransportRequest): Promise<TransportResponse> {
    return this.to(r.url).send(r);
  }

  /** send() without a promise where the chosen transport dispatches (the readings' own client). */
  dispatch(r: TransportRequest, cb: TransportCallbacks): void {
    dispatchTo(this.to(r.url), r, cb);
  }

  private to(url: string): BlockTransport {
    if (HELD.test(url)) return this.held;
    return url.startsWith("http://") ? this.plain : this.secure;
  }

  async close(): Promise<void> {
    // The fleet closes the transports it made (fleetTransport's close).
  }
}
