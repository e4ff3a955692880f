/**
 * A real server listening on loopback (free ports, a fresh temporary SQLite directory unless given),
 * with the admin user's token known, for the tests that talk to it over real sockets (gateway,
 * command line, end to end).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { request } from "undici";
import { BlockkitServer, type ServerOptions, type StartedServer } from "../../server/controller.js";

/** The first user's access token on every live server (`--admin-token`). */
export const ADMIN_TOKEN = "admin-token-0123456789";

export interface LiveServer extends StartedServer {
  server: BlockkitServer;
  dir: string;
  /** The admin user's access token. */
  token: string;
  /** A user API call with the admin token; returns status and parsed body. */
  user(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  /** Raw readings of a device (history without interval), oldest first. */
  history(guid: string): Promise<{ t: string; v: unknown }[]>;
  /** Stops the server and removes its directory unless `keepDir` (a restart on the same data). */
  close(opts?: { keepDir?: boolean }): Promise<void>;
}

/** Starts a server on port 0 (both ports) on `dir`, a fresh temporary directory unless given. Poll hold 2 s. */
export async function startLive(options: ServerOptions & { dir?: string } = {}): Promise<LiveServer> {
  const { dir: given, ...rest } = options;
  const dir = given ?? mkdtempSync(join(tmpdir(), "blockkit-live-"));
  const server = new BlockkitServer({
    host: "127.0.0.1",
    port: 0,
    streamPort: 0,
    dataDir: dir,
    logger: pino({ level: "silent" }),
    adminToken: ADMIN_TOKEN,
    pollHoldSeconds: 2,
    ...rest,
  });
  let started: StartedServer;
  try {
    started = await server.start();
  } catch (err) {
    if (!given) rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const live: LiveServer = {
    ...started,
    server,
    dir,
    token: options.adminToken ?? ADMIN_TOKEN,
    async user(method, path, body) {
      const sep = path.includes("?") ? "&" : "?";
      const res = await request(`${started.baseUrl}${path}${sep}user_access_token=${live.token}`, {
        method: method as "GET",
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.body.text();
      return { status: res.statusCode, body: text ? (JSON.parse(text) as unknown) : null };
    },
    async history(guid) {
      const r = await live.user("GET", `/device/${guid}/data?from=0`);
      if (r.status !== 200) return [];
      return (r.body as { data?: { t: string; v: unknown }[] }).data ?? [];
    },
    async close(opts = {}) {
      await server.stop();
      if (!opts.keepDir) rmSync(dir, { recursive: true, force: true });
    },
  };
  return live;
}
