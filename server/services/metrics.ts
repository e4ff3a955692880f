/**
 * The server's Prometheus metrics (prom-client), served at GET /metrics on the API listener
 * (http/metrics.ts). Counters kept by the services themselves (ingest, callbacks, rules, limits)
 * are read when scraped; requests and commit times are observed as they happen.
 */
import { readdir } from "node:fs/promises";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { Services } from "./index.js";

/**
 * prom-client's default gauges that walk every handle of the process when scraped: an array of
 * every libuv handle (twice) and every resource's name, built on the event loop at each scrape, one
 * per open connection; and the open descriptors, counted with a readdirSync of /proc/self/fd, one
 * entry per connection too (docs/scaling-fleet.md, "Where one SQLite server's CPU goes per reading").
 */
export const WALKS_EVERY_HANDLE = ["nodejs_active_handles", "nodejs_active_handles_total", "nodejs_active_resources", "nodejs_active_resources_total", "process_open_fds"];

/**
 * prom-client's default process metrics under `blockkit_process_`, without those that walk every
 * handle on the event loop; the open descriptors are still counted, by a readdir in libuv's thread
 * pool (the event loop only receives the names). Shared with bench/scrape.ts.
 */
export function processMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, prefix: "blockkit_process_" });
  for (const name of WALKS_EVERY_HANDLE) registry.removeSingleMetric(`blockkit_process_${name}`);
  if (process.platform !== "linux") return;
  new Gauge({
    name: "blockkit_process_process_open_fds",
    help: "Number of open file descriptors.",
    registers: [registry],
    async collect() {
      const fds = await readdir("/proc/self/fd").catch(() => null);
      // Minus the descriptor of the directory being read.
      if (fds) this.set(fds.length - 1);
    },
  });
}

export class ServerMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<"route" | "method" | "status">;

  constructor(s: Omit<Services, "metrics">) {
    const registers = [this.registry];
    // Not every default: blockkit_open_connections counts the connections the handle walks counted.
    processMetrics(this.registry);
    this.requests = new Counter({
      name: "blockkit_http_requests_total",
      help: "HTTP requests answered, by route pattern, method and status",
      labelNames: ["route", "method", "status"],
      registers,
    });
    const commits = new Histogram({
      name: "blockkit_ingest_commit_seconds",
      help: "Time of one batch commit of block events",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    s.ingest.observeCommit = (seconds) => commits.observe(seconds);
    /** A counter whose value a service keeps: read at each scrape. */
    const kept = (name: string, help: string, read: () => number): void => {
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    };
    const keptByLabel = <L extends string>(name: string, help: string, label: L, read: () => Iterable<[string, number]>): void => {
      new Counter({
        name,
        help,
        labelNames: [label],
        registers,
        collect() {
          this.reset();
          for (const [value, n] of read()) this.inc({ [label]: value } as Record<L, string>, n);
        },
      });
    };
    const gauge = (name: string, help: string, read: () => number): void => {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    };
    const a = s.automation;
    kept("blockkit_ingest_events_total", "Block events committed", () => s.ingest.stats.events);
    kept("blockkit_ingest_batches_total", "Batches of block events committed", () => s.ingest.stats.batches);
    kept("blockkit_ingest_duplicates_total", "Block events acknowledged again (idempotency key seen)", () => s.ingest.stats.duplicates);
    gauge("blockkit_ingest_queue", "Block events waiting for their commit", () => s.ingest.depth);
    gauge("blockkit_held_polls", "Commands long-polls held now", () => s.commands.heldPolls);
    gauge("blockkit_activation_holds", "Activation requests held now", () => s.activation.heldCount);
    gauge("blockkit_open_connections", "Open connections on both listeners", () => s.limits.openConnections);
    gauge("blockkit_callback_queue_depth", "Callback deliveries waiting or in flight", () => a.callbacks.depth);
    kept("blockkit_callback_delivered_total", "Callback deliveries answered 2xx", () => a.callbacks.stats.delivered);
    kept("blockkit_callback_retries_total", "Callback attempts retried", () => a.callbacks.stats.retries);
    keptByLabel("blockkit_callback_drops_total", "Callback deliveries dropped, by reason", "reason", () => Object.entries(a.callbacks.drops));
    kept("blockkit_rule_runs_total", "Rule runs finished", () => a.engine.stats.runs);
    kept("blockkit_rule_failures_total", "Rule runs stopped by a failing action", () => a.engine.stats.failed);
    kept("blockkit_rule_dropped_total", "Rule firings dropped (fired faster than it runs)", () => a.engine.stats.dropped);
    kept("blockkit_rule_runs_resumed_total", "Rule runs taken over here after the instance running them lost its lease (PostgreSQL)", () => a.engine.stats.resumed);
    kept("blockkit_rule_evaluations_taken_over_total", "Readings whose rules were evaluated here after the instance that committed them lost its lease (PostgreSQL)", () => a.engine.evaluationsTakenOver);
    kept("blockkit_rule_loops_total", "Rule firings refused because the rule's own action chain caused the event", () => a.engine.stats.loops);
    kept("blockkit_rule_suspended_total", "Rules suspended for firing too fast for too long (the loop backstop)", () => a.engine.stats.suspended);
    keptByLabel("blockkit_limit_hits_total", "Times a limit bit (connections, timeouts, holds, rate limits)", "limit", () => s.limits.hits);
    kept("blockkit_store_errors_total", "Requests refused for a store failure, and failed ingest commits", () => s.storeHealth.state().refused + s.ingest.stats.failedBatches);
    gauge("blockkit_store_ok", "1 when the store writes, 0 while degraded", () => (s.storeHealth.state().ok ? 1 : 0));
  }

  /** One answered request (route: the pattern, e.g. /rest/v0/device/:guid; "unmatched" for a 404 without route). */
  request(route: string, method: string, status: number): void {
    this.requests.inc({ route, method, status: String(status) });
  }
}
