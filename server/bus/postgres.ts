/**
 * The Bus across server instances on PostgreSQL. LISTEN/NOTIFY is only the wake-up: the state a
 * message points at (a queued command, a claimed block, a snapshot, a revoked token, a changed
 * rule) is in tables, and a subscriber re-reads it. What NOTIFY implies, and how it is handled:
 *  - a notification is sent at COMMIT, so publishers publish after their write committed;
 *  - a payload must stay under 8,000 bytes: channel and message are short (node ids, hashes in
 *    chunks of 100), and a longer one is refused here rather than cut;
 *  - LISTEN holds a session, so it cannot go through the pool: one dedicated connection, which
 *    reconnects (backing off up to 5 s) when it is lost;
 *  - anything sent while it was disconnected is lost: after a reconnection every onResync handler
 *    runs, and re-reads what it may have missed (the auth cache empties itself, held polls check
 *    their queues again).
 * Local subscribers hear a publish synchronously, as on the LocalBus, and the instance skips its
 * own notifications when they come back.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import type { Logger } from "pino";
import { clientConfig } from "../store/postgres/db.js";
import { LocalBus } from "./local.js";
import type { Bus, BusHandler } from "./types.js";

const PG_CHANNEL = "blockkit_bus";
const MAX_PAYLOAD = 7900;

export class PgBus implements Bus {
  private readonly local = new LocalBus();
  private readonly resync = new Set<() => void>();
  private readonly id = randomUUID().slice(0, 8);
  private listener: pg.Client | null = null;
  private closed = false;
  private retryMs = 100;
  private reconnectTimer: NodeJS.Timeout | undefined;
  /** Counters for tests and /metrics. */
  readonly stats = { sent: 0, received: 0, reconnects: 0, sendFailures: 0 };

  constructor(
    private readonly url: string,
    private readonly pool: pg.Pool,
    private readonly log: Logger,
  ) {}

  /** Connects the listening connection; rejects when PostgreSQL cannot be reached at start. */
  async start(): Promise<void> {
    await this.connect();
  }

  publish(channel: string, message: string): void {
    this.local.publish(channel, message);
    const payload = `${this.id} ${channel} ${message}`;
    if (Buffer.byteLength(payload) > MAX_PAYLOAD) {
      this.log.error({ channel, bytes: Buffer.byteLength(payload) }, "a Bus message is too long for NOTIFY; not sent to other instances");
      return;
    }
    this.stats.sent++;
    // The NOTIFY's own transaction commits without waiting for the WAL flush (synchronous_commit off
    // for that transaction only): the state it points at was committed durably before, and a
    // notification is delivered only once its transaction's commit returns, so a durable commit
    // put a second flush between a command's PUT on one instance and the poll held on another.
    this.pool.query("SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)", [PG_CHANNEL, payload]).catch((err: unknown) => {
      // The state is in tables: the other instances re-read it after their reconnection or at
      // their next poll; nothing acknowledged depends on this message alone.
      this.stats.sendFailures++;
      this.log.warn({ err, channel }, "NOTIFY failed");
    });
  }

  subscribe(channel: string, handler: BusHandler): () => void {
    return this.local.subscribe(channel, handler);
  }

  onResync(handler: () => void): () => void {
    this.resync.add(handler);
    return () => this.resync.delete(handler);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const l = this.listener;
    this.listener = null;
    await l?.end().catch(() => undefined);
    await this.local.close();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(clientConfig(this.url));
    client.on("notification", (n) => this.deliver(n.payload ?? ""));
    client.on("error", (err) => {
      this.log.warn({ err }, "the Bus connection failed; reconnecting");
      this.lost(client);
    });
    client.on("end", () => this.lost(client));
    await client.connect();
    await client.query(`LISTEN ${PG_CHANNEL}`);
    this.listener = client;
    this.retryMs = 100;
  }

  private deliver(payload: string): void {
    const a = payload.indexOf(" ");
    const b = payload.indexOf(" ", a + 1);
    if (a < 0 || b < 0 || payload.slice(0, a) === this.id) return;
    this.stats.received++;
    this.local.publish(payload.slice(a + 1, b), payload.slice(b + 1));
  }

  private lost(client: pg.Client): void {
    if (this.listener !== client || this.closed) return;
    this.listener = null;
    client.end().catch(() => undefined);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.connect().then(
        () => {
          this.stats.reconnects++;
          this.log.info("the Bus connection is back; re-reading state");
          for (const h of [...this.resync]) {
            try {
              h();
            } catch (err) {
              this.log.error({ err }, "a Bus resync handler failed");
            }
          }
        },
        () => {
          this.retryMs = Math.min(5000, this.retryMs * 2);
          this.scheduleReconnect();
        },
      );
    }, this.retryMs);
    this.reconnectTimer.unref();
  }
}
