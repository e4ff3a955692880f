/**
 * The fleet's HTTP connections. Held calls (the commands long-poll and activation) each keep a
 * connection busy for up to 30 s, so they get a pool without a cap; short calls (readings,
 * snapshots) share a small pool of always-free connections. In one undici pool the short calls
 * would scan past ten thousand busy long-poll connections to find a free one (the pool looks for a
 * free client linearly), which costs more CPU than the requests themselves.
 *
 * The router is a Dispatcher of its own rather than `compose()`: a composed dispatcher wraps every
 * handler twice (old to new handler API and back), which showed in the profile at 10,000 calls a second.
 */
import { Agent, Dispatcher } from "undici";

export interface FleetDispatcher {
  dispatcher: Dispatcher;
  close(): Promise<void>;
}

const HELD = /\/(commands|activate)(\?|$)/;

export function fleetDispatcher(shortConnections = 128): FleetDispatcher {
  const held = new Agent({ keepAliveTimeout: 60_000, connections: null, pipelining: 1 });
  const short = new Agent({ keepAliveTimeout: 60_000, connections: shortConnections, pipelining: 1 });
  const dispatcher = new Router(held, short);
  return {
    dispatcher,
    close: async () => {
      await Promise.all([held.close(), short.close()]);
    },
  };
}

/** Sends held calls to one agent and the rest to the other; closing is the owner's (close() above). */
class Router extends Dispatcher {
  constructor(
    private readonly held: Dispatcher,
    private readonly short: Dispatcher,
  ) {
    super();
  }

  override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return (HELD.test(opts.path) ? this.held : this.short).dispatch(opts, handler);
  }
}
