/**
 * The fleet's HTTP connections. Held calls (the commands long-poll and activation) each keep a
 * connection busy for up to 30 s, so they get a pool without a cap; short calls (readings,
 * snapshots) share a small pool of always-free connections. In one undici pool the short calls
 * would scan past ten thousand busy long-poll connections to find a free one (the pool looks for a
 * free client linearly), which costs more CPU than the requests themselves.
 */
import { Agent, type Dispatcher } from "undici";

export interface FleetDispatcher {
  dispatcher: Dispatcher;
  close(): Promise<void>;
}

const HELD = /\/(commands|activate)(\?|$)/;

export function fleetDispatcher(shortConnections = 128): FleetDispatcher {
  const held = new Agent({ keepAliveTimeout: 60_000, connections: null, pipelining: 1 });
  const short = new Agent({ keepAliveTimeout: 60_000, connections: shortConnections, pipelining: 1 });
  const dispatcher = short.compose((dispatch) => (opts, handler) => (HELD.test(opts.path) ? held.dispatch(opts, handler) : dispatch(opts, handler)));
  return {
    dispatcher,
    close: async () => {
      await Promise.all([held.close(), short.close()]);
    },
  };
}
