/**
 * `/healthz` (JSON) and `/metrics` (Prometheus text format 0.0.4) on a local port: outbox depth and
 * drops, link states, commands delivered, reconnects, throttled answers (429), last server contact.
 */
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { AgentStats } from "../agent/agent.js";
import type { Link } from "../links/types.js";
import { listenUrl } from "../../protocol/listen-url.js";

export interface HealthSource {
  agent(): AgentStats;
  links(): Link[];
  startedAt: number;
}

export class HealthServer {
  private server: Server | null = null;
  /** The port actually listened on (after start): the system's pick for port 0. */
  port = 0;

  constructor(
    private readonly source: HealthSource,
    private readonly o: { port: number; host: string },
  ) {}

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      const path = (req.url ?? "/").split("?")[0];
      if (req.method !== "GET") {
        res.writeHead(405, { "content-type": "text/plain" }).end("only GET\n");
      } else if (path === "/healthz") {
        const body = healthz(this.source);
        res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" }).end(`${JSON.stringify(body)}\n`);
      } else if (path === "/metrics") {
        res.writeHead(200, { "content-type": "text/plain; version=0.0.4" }).end(metrics(this.source));
      } else {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found: try /healthz or /metrics\n");
      }
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", (err: NodeJS.ErrnoException) => {
        // A second gateway on one machine meets the first one's health port: say which port and how to move it.
        if (err.code === "EADDRINUSE") {
          reject(
            new Error(
              `the health port ${this.o.host}:${this.o.port} is in use (another gateway?): choose another with --health-port or health.port, or turn it off with health.enabled: false`,
            ),
          );
        } else reject(err);
      });
      server.listen(this.o.port, this.o.host, () => {
        server.removeAllListeners("error");
        resolve();
      });
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** Where a client on this machine reaches /healthz and /metrics (after start). */
  get url(): string {
    return listenUrl("http", this.o.host, this.port);
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
}

export function healthz(src: HealthSource): Record<string, unknown> {
  const a = src.agent();
  const links = Object.fromEntries(src.links().map((l) => [l.name, l.state]));
  const ok = a.state === "online" && !a.outboxFull && Object.values(links).every((s) => s === "up");
  return {
    status: ok ? "ok" : "degraded",
    agent: a.state,
    links,
    // full: the outbox cannot write (disk full or failing) and readings are refused, not acknowledged.
    outbox: { rows: a.outboxRows, bytes: a.outboxBytes, dropped: a.dropped, full: a.outboxFull, refused: a.refused },
    lastServerContact: a.lastServerContact,
    uptimeSeconds: Math.round((Date.now() - src.startedAt) / 1000),
  };
}

const esc = (v: string): string => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");

export function metrics(src: HealthSource): string {
  const a = src.agent();
  const out: string[] = [];
  const m = (name: string, type: "gauge" | "counter", help: string, samples: [string, number][]): void => {
    out.push(`# HELP blockkit_gateway_${name} ${help}`, `# TYPE blockkit_gateway_${name} ${type}`);
    for (const [labels, v] of samples) out.push(`blockkit_gateway_${name}${labels} ${v}`);
  };
  m("outbox_rows", "gauge", "Readings waiting in the outbox.", [["", a.outboxRows]]);
  m("outbox_bytes", "gauge", "Payload bytes waiting in the outbox.", [["", a.outboxBytes]]);
  m("outbox_dropped_total", "counter", "Readings dropped by the outbox bounds (rows, bytes, age).", [["", a.dropped]]);
  m("outbox_full", "gauge", "1 while the outbox cannot write (disk full or failing) and refuses readings.", [["", a.outboxFull ? 1 : 0]]);
  m("readings_refused_total", "counter", "Readings refused, not acknowledged to their node, because the outbox could not write.", [["", a.refused]]);
  m("readings_submitted_total", "counter", "Readings stored in the outbox.", [["", a.submitted]]);
  m("readings_acked_total", "counter", "Readings acknowledged by the server.", [["", a.acked]]);
  m("readings_rejected_total", "counter", "Readings the server refused for good.", [["", a.rejected]]);
  m("readings_invalid_total", "counter", "Readings refused before the outbox.", [["", a.invalid]]);
  m("commands_received_total", "counter", "Commands received on the long-poll.", [["", a.commandsReceived]]);
  m("commands_delivered_total", "counter", "Commands handed to hardware (or snapshots uploaded).", [["", a.commandsDelivered]]);
  m("commands_failed_total", "counter", "Commands that failed at the link.", [["", a.commandsFailed]]);
  m("commands_unroutable_total", "counter", "Commands for devices no link owns.", [["", a.commandsUnroutable]]);
  m("server_reconnects_total", "counter", "Times the server became reachable again.", [["", a.reconnects]]);
  m("activations_total", "counter", "Block tokens obtained.", [["", a.activations]]);
  m("revocations_total", "counter", "Block tokens refused by the server.", [["", a.revocations]]);
  m("last_server_contact_seconds", "gauge", "Epoch seconds of the last answer from the server (0: never).", [
    ["", a.lastServerContact === null ? 0 : a.lastServerContact / 1000],
  ]);
  const throttled = Object.entries(a.throttled).map(([kind, n]): [string, number] => [`{kind="${kind}"}`, n]);
  m("throttled_total", "counter", "Answers 429 (rate limited), by call: uplink (readings), poll (commands), activate, each asked again after its Retry-After; snapshot (camera uploads, dropped).", throttled);
  m("agent_online", "gauge", "1 when the agent is activated and the server reachable.", [["", a.state === "online" ? 1 : 0]]);
  const links = src.links();
  m("link_up", "gauge", "1 when the link is up.", links.map((l) => [`{link="${esc(l.name)}"}`, l.state === "up" ? 1 : 0]));
  const counters: [string, number][] = [];
  for (const l of links) for (const [k, v] of Object.entries(l.counters())) counters.push([`{link="${esc(l.name)}",counter="${esc(k)}"}`, v]);
  m("link_events_total", "counter", "Per-link counters (frames, garbage, reconnects, …).", counters);
  return `${out.join("\n")}\n`;
}
