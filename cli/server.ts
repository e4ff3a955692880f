/** `blockkit server`: run the service (accounts: users.ts). */
import type { Command } from "commander";
import { StartCancelled } from "../protocol/lifecycle.js";
import { programLogger } from "./logger.js";
import { CliError } from "./errors.js";
import type { PartitionInterval } from "../server/store/postgres/partition-ranges.js";
import { dbUrl, duration, keyRetention, logLevel, networks, partitionInterval, port, positiveInt, positiveNumber, proxies, publicUrl, storeLocation, url, wholeNumber } from "./options.js";
import { stopOnSignals } from "./signals.js";
import { schemaRefusal } from "./store-open.js";
import { parseStoreUrl } from "../server/store/url.js";
import type { LimitOptions } from "../server/services/limit-options.js";

interface ServerFlags {
  host: string;
  port: number;
  streamPort?: number;
  data: string;
  db?: string;
  adminToken?: string;
  smtpUrl?: string;
  smsUrl?: string;
  metricsToken?: string;
  outboundAllow?: string[];
  outboundDeny?: string[];
  pollHold: number;
  logLevel: string;
  retention?: number;
  partitionInterval?: PartitionInterval;
  idempotencyRetention?: number;
  lease: number;
  maxConnectionsPerAddress?: number;
  maxConnectionsPerUser?: number;
  maxConnectionsPerBlock?: number;
  metricsReserve?: number;
  trustProxy?: string[];
  publicUrl?: string;
  publicStreamUrl?: string;
}

export function registerServer(program: Command): void {
  program
    .command("server")
    .description("run the service: REST API, block protocol, pages, and the stream listener")
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--port <port>", "API port", port, 8000)
    .option("--stream-port <port>", "camera stream port (default: port + 1; with --port 0, a free port, shown as stream_url)", port)
    .option("--data <dir>", "directory of the embedded SQLite store", "./data")
    .option("--db <url>", "store URL: sqlite:DIR, a directory or postgres://… (default: BLOCKKIT_DB, else --data)", dbUrl)
    .option("--admin-token <token>", "personal access token of the first user on an empty database")
    .option("--smtp-url <url>", "SMTP server for the sendEmail action", url)
    .option("--sms-url <url>", "SMS gateway (HTTP POST of {to, body})", url)
    .option("--retention <duration>", "PostgreSQL: drop readings older than this, a partition at a time (e.g. 400d)", duration)
    .option(
      "--partition-interval <interval>",
      "PostgreSQL: readings partitions by day, week or month, fixed when the database is made (a new one: month unless given; changed by blockkit migrate)",
      partitionInterval,
    )
    .option(
      "--idempotency-retention <duration>",
      "how long a reading's idempotency KEY is remembered, at least 1h (default: BLOCKKIT_IDEMPOTENCY_RETENTION, else 7d)",
      keyRetention,
    )
    .option(
      "--lease <seconds>",
      "PostgreSQL: how long this instance's lease on a callback delivery or a rule run lasts unrenewed, i.e. how soon another instance takes over the work of one that died",
      positiveNumber,
      10,
    )
    .option("--metrics-token <token>", "bearer token that opens GET /metrics to other addresses (default: BLOCKKIT_METRICS_TOKEN; none: loopback only)")
    .option(
      "--outbound-allow <networks>",
      "networks (CIDR) that callbacks, webhook actuators and File Host targets may reach; repeatable; default: any but the denied (env BLOCKKIT_OUTBOUND_ALLOW)",
      networks,
    )
    .option(
      "--outbound-deny <networks>",
      "networks they must not reach, besides link-local and the server's own ports; repeatable (env BLOCKKIT_OUTBOUND_DENY)",
      networks,
    )
    .option(
      "--max-connections-per-address <n>",
      "open connections from one address, both ports; past it a new connection is reset at once. Behind a proxy on another machine every client shares its address: raise this (default: BLOCKKIT_MAX_CONNECTIONS_PER_ADDRESS, else 256; loopback is never capped)",
      positiveInt,
    )
    .option(
      "--max-connections-per-user <n>",
      "open connections one user's credentials (token, OAuth tokens, sessions) may hold; past it a request is answered 429 and its connection closed (default: BLOCKKIT_MAX_CONNECTIONS_PER_USER, else 256)",
      positiveInt,
    )
    .option(
      "--max-connections-per-block <n>",
      "open connections one block (its token) may hold, its long-poll included; the same answer past it (default: BLOCKKIT_MAX_CONNECTIONS_PER_BLOCK, else 32)",
      positiveInt,
    )
    .option(
      "--metrics-reserve <n>",
      "connections from the machine itself admitted past the connection cap for GET /metrics and /healthz only; 0: none (default: BLOCKKIT_METRICS_RESERVE, else 8)",
      wholeNumber,
    )
    .option(
      "--trust-proxy <addresses>",
      "proxies (addresses or CIDRs, comma-separated, e.g. 127.0.0.1,::1) whose X-Forwarded-For gives the client's address; default: none (env BLOCKKIT_TRUST_PROXY)",
      proxies,
    )
    .option(
      "--public-url <url>",
      "the API's address as browsers reach it behind a proxy (e.g. https://hub.example): its pages may call the camera operations on the stream port (CORS); default: none, auth_url only (env BLOCKKIT_PUBLIC_URL)",
      publicUrl,
    )
    .option(
      "--public-stream-url <url>",
      "the stream port's address as clients reach it behind a proxy (e.g. https://hub.example:8443): the camera operations' server in the API reference at /docs; default: stream_url (env BLOCKKIT_PUBLIC_STREAM_URL)",
      publicUrl,
    )
    .option("--poll-hold <seconds>", "hold of the commands long-poll and of activation", positiveNumber, 30)
    .option("--log-level <level>", "log level", logLevel, "info")
    .action(async (flags: ServerFlags) => {
      // Loaded on use, so that `blockkit gateway` on a Pi does not carry the server's modules.
      const { BlockkitServer } = await import("../server/controller.js");
      const logger = await programLogger("blockkit", flags.logLevel);
      const { url: db, dataDir } = storeLocation(flags);
      refusePgOnly(flags, db);
      const server = new BlockkitServer({
        host: flags.host,
        port: flags.port,
        streamPort: flags.streamPort,
        db,
        dataDir,
        retentionMs: flags.retention,
        partitionInterval: flags.partitionInterval,
        keyRetentionMs: flags.idempotencyRetention ?? fromEnv("BLOCKKIT_IDEMPOTENCY_RETENTION", keyRetention),
        leaseMs: flags.lease * 1000,
        adminToken: flags.adminToken,
        smtpUrl: flags.smtpUrl,
        smsUrl: flags.smsUrl,
        metricsToken: flags.metricsToken ?? process.env.BLOCKKIT_METRICS_TOKEN,
        revocationPollMs: revocationPoll(),
        outbound: {
          allow: flags.outboundAllow ?? fromEnv("BLOCKKIT_OUTBOUND_ALLOW", networks),
          deny: flags.outboundDeny ?? fromEnv("BLOCKKIT_OUTBOUND_DENY", networks),
        },
        pollHoldSeconds: flags.pollHold,
        limits: connectionShares(flags),
        trustProxy: flags.trustProxy ?? fromEnv("BLOCKKIT_TRUST_PROXY", proxies),
        publicUrl: flags.publicUrl ?? fromEnv("BLOCKKIT_PUBLIC_URL", publicUrl),
        publicStreamUrl: flags.publicStreamUrl ?? fromEnv("BLOCKKIT_PUBLIC_STREAM_URL", publicUrl),
        logger,
      });
      // systemd's Type=notify (server/systemd/blockkit-server.service): READY=1 once listening.
      const { SdNotify } = await import("../gateway/daemon/sd-notify.js");
      const notify = new SdNotify(logger.child({ module: "srv:systemd" }));
      stopOnSignals(
        logger,
        () => notify.stopping().then(() => server.stop()),
        () => {
          if (!server.api || !server.stream) return;
          server.api.server.closeAllConnections();
          server.stream.server.closeAllConnections();
        },
      );
      let started: Awaited<ReturnType<typeof server.start>>;
      try {
        // A failed start (a port in use) has closed what it opened (the store) when it rejects.
        started = await server.start();
      } catch (err) {
        // SIGINT/SIGTERM during start: the signal handler's stop() ends the process once it is done.
        if (err instanceof StartCancelled) return;
        // A store written by a newer blockkit: refused (exit 2), never run on.
        throw schemaRefusal(err);
      }
      const out = [
        "blockkit server ready",
        `base_url   ${started.baseUrl}`,
        `auth_url   ${started.authUrl}`,
        `stream_url ${started.streamUrl}`,
      ];
      if (started.firstUser) {
        const u = started.firstUser;
        out.push(`first user ${u.name}: user_access_token ${u.token} password ${u.password}`);
      }
      process.stdout.write(`${out.join("\n")}\n`);
      await notify.ready(() => true);
    });
}

/** The connection caps of --max-connections-per-address, -per-user, -per-block, --metrics-reserve or their variables. */
function connectionShares(flags: ServerFlags): Partial<LimitOptions> {
  const pick = (flag: number | undefined, name: string, parse: (v: string) => number): number | undefined => flag ?? fromEnv(name, parse);
  const out: Partial<LimitOptions> = {};
  const address = pick(flags.maxConnectionsPerAddress, "BLOCKKIT_MAX_CONNECTIONS_PER_ADDRESS", positiveInt);
  const user = pick(flags.maxConnectionsPerUser, "BLOCKKIT_MAX_CONNECTIONS_PER_USER", positiveInt);
  const block = pick(flags.maxConnectionsPerBlock, "BLOCKKIT_MAX_CONNECTIONS_PER_BLOCK", positiveInt);
  const reserve = pick(flags.metricsReserve, "BLOCKKIT_METRICS_RESERVE", wholeNumber);
  if (address !== undefined) out.maxConnectionsPerAddress = address;
  if (user !== undefined) out.maxConnectionsPerUser = user;
  if (block !== undefined) out.maxConnectionsPerBlock = block;
  if (reserve !== undefined) out.metricsReserve = reserve;
  return out;
}

/** A flag's variable read with the flag's own parser; unset or blank: undefined; malformed: refused with its name. */
function fromEnv<T>(name: string, parse: (value: string) => T): T | undefined {
  const value = process.env[name];
  if (value === undefined || value.trim() === "") return undefined;
  try {
    return parse(value.trim());
  } catch (err) {
    throw new CliError(`${name}: ${(err as Error).message}`);
  }
}

/**
 * --retention and --partition-interval shape PostgreSQL's readings partitions; the embedded SQLite
 * store has none and keeps every reading, so asking for them there is refused, not ignored.
 */
function refusePgOnly(flags: ServerFlags, db: string): void {
  if (parseStoreUrl(db).kind !== "sqlite") return;
  const given = [flags.retention !== undefined ? "--retention" : "", flags.partitionInterval !== undefined ? "--partition-interval" : ""].filter((f) => f !== "");
  if (given.length > 0) throw new CliError(`${given.join(" and ")}: for a PostgreSQL store only (--db postgres://…); the embedded SQLite store keeps every reading`);
}

/** BLOCKKIT_REVOCATION_POLL_MS (docs/operations.md): a whole number of ms, 0 to turn the poll off. */
function revocationPoll(): number | undefined {
  const value = process.env.BLOCKKIT_REVOCATION_POLL_MS;
  if (value === undefined || value === "") return undefined;
  if (!/^\d+$/.test(value)) throw new CliError(`BLOCKKIT_REVOCATION_POLL_MS: "${value}" is not a whole number of milliseconds`);
  return Number(value);
}
