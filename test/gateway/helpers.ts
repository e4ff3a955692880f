/** Shared pieces of the gateway tests: a listening server, waiting with a bound, history reads. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { request } from "undici";
import { BlockkitServer, type ServerOptions, type StartedServer } from "../../server/controller.js";

export const ADMIN = "admin-token-0123456789";

export interface LiveServer extends StartedServer {
  server: BlockkitServer;
  dir: string;
  /** A user API call with the admin token; returns status and parsed body. */
  user(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  /** Raw readings of a device (history without interval), oldest first. */
  history(guid: string): Promise<{ t: string; v: unknown }[]>;
  stop(opts?: { keepDir?: boolean }): Promise<void>;
}

/** A real server listening on loopback (port 0), on `dir` (a fresh temp dir unless given). */
export async function startLiveServer(options: ServerOptions & { dir?: string } = {}): Promise<LiveServer> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "blockkit-gw-srv-"));
  const server = new BlockkitServer({
    dataDir: dir,
    logger: pino({ level: "silent" }),
    adminToken: ADMIN,
    pollHoldSeconds: 2,
    port: 0,
    streamPort: 0,
    ...options,
  });
  const started = await server.start();
  const live: LiveServer = {
    ...started,
    server,
    dir,
    async user(method, path, body) {
      const sep = path.includes("?") ? "&" : "?";
      const res = await request(`${started.baseUrl}${path}${sep}user_access_token=${ADMIN}`, {
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
      return ((r.body as { data: { t: string; v: unknown }[] }).data ?? []) as { t: string; v: unknown }[];
    },
    async stop(opts = {}) {
      await server.stop();
      if (!opts.keepDir) rmSync(dir, { recursive: true, force: true });
    },
  };
  return live;
}

/** Polls `check` until it returns a truthy value, at most `ms`; throws naming `what` on timeout. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, ms = 10_000, everyMs = 20): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `blockkit-${prefix}-`));
}

/** A TCP port that was free a moment ago. */
export async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}
