/**
 * The fleet's HTTP connections, shared by all its blocks. Held calls (the commands long-poll and
 * activation) each keep a connection busy for up to 30 s, so they get a connection each, without a
 * cap, the idle ones on a stack (a block's renewed poll takes the connection its last poll freed);
 * short calls (readings, snapshots) share a small pool of always-free connections. Mixing them in
 * one pool would have the short calls scan past ten thousand busy long-poll connections to find a
 * free one.
 *
 * Both go through the simulator's own HTTP/1.1 client (simulator/transport/) to a plain-http
 * server: the short calls pipelined (the calls of one tick share a connection and leave in one
 * write), the held calls one per connection, checked for their deadlines once a second. At ten
 * thousand readings a second, undici's dispatch path was two thirds of the simulator's CPU per
 * event, and a write per request a fifth of it; its objects per held call (a poll lives 30 s, long
 * enough to be promoted) were most of what an idle fleet's garbage collector worked on. With `kind`
 * "undici" (`blockkit sim --transport undici`) both go through undici instead (the held calls
 * through held-pool.ts, an undici dispatcher with the same stack of free connections), as do the
 * calls to an https server in either case.
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
  const undiciHeldPool = new HeldPool({ keepAliveTimeout: 60_000 });
  const secure = new Agent({ keepAliveTimeout: 60_000, connections: shortConnections, pipelining: 1 });
  const lean = kind === "http1" ? new Http1Transport({ connections: shortConnections, pipelining }) : null;
  const leanHeld = kind === "http1" ? new Http1Transport({ connections: HELD_CONNECTIONS, pipelining: 1, sweepMs: HELD_SWEEP_MS }) : null;
  const undiciHeld = new UndiciTransport(undiciHeldPool);
  const undiciSecure = new UndiciTransport(secure);
  const router = new Router({ held: leanHeld ?? undiciHeld, plain: lean ?? undiciSecure }, { held: undiciHeld, plain: undiciSecure });
  return {
    transport: router,
    close: async () => {
      await Promise.all([undiciHeldPool.close(), secure.close(), lean?.close(), leanHeld?.close()]);
    },
  };
}

/** The held calls' connections: one per call in flight, as many as the blocks (the open-file limit bounds them). */
const HELD_CONNECTIONS = Number.MAX_SAFE_INTEGER;
/** How often the held calls' deadlines are checked, ms (a poll is held 30 s). */
const HELD_SWEEP_MS = 1_000;

interface Routes {
  held: BlockTransport;
  plain: BlockTransport;
}

/** Sends held calls and short ones to their transports, plain http and https apart; closing is the owner's (above). */
class Router implements BlockTransport {
  constructor(
    private readonly plain: Routes,
    private readonly secure: Routes,
  ) {}

  send(r: TransportRequest): Promise<TransportResponse> {
    return this.to(r.url).send(r);
  }

  /** send() without a promise where the chosen transport dispatches (the readings' own client). */
  dispatch(r: TransportRequest, cb: TransportCallbacks): void {
    dispatchTo(this.to(r.url), r, cb);
  }

  private to(url: string): BlockTransport {
    const routes = url.startsWith("http://") ? this.plain : this.secure;
    return HELD.test(url) ? routes.held : routes.plain;
  }

  async close(): Promise<void> {
    // The fleet closes the transports it made (fleetTransport's close).
  }
}
