/** Test harness: a real server on a temporary SQLite file, driven through fastify.inject(). */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import pino from "pino";
import { BlockkitServer, type ServerOptions } from "../../server/controller.js";

export interface TestServer {
  server: BlockkitServer;
  dir: string;
  /** The REST root when started with `listen` (real HTTP on loopback), else undefined. */
  baseUrl: string | undefined;
  /** The first user's personal access token. */
  token: string;
  /** inject() against the API app, with `/rest/v0` prefixed to paths that start with `/` but not `/auth` or `/oauth`. */
  api(opts: InjectOptions & { url: string }): Promise<LightMyRequestResponse>;
  /** A second user with their own token. */
  addUser(name: string): Promise<string>;
  /** Activates a block through the direct flow for the given user token; returns the block token. */
  activate(nodeId: string, userToken?: string): Promise<string>;
  close(): Promise<void>;
}

export const rest = (path: string): string => (path.startsWith("/rest/") ? path : `/rest/v0${path}`);

export async function startTestServer(options: ServerOptions = {}, how: { listen?: boolean } = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "blockkit-test-"));
  const server = new BlockkitServer({
    dataDir: dir,
    logger: pino({ level: "silent" }),
    adminToken: "admin-token-0123456789",
    pollHoldSeconds: 2,
    // Free ports: the defaults (8000, 8001) may be a developer's own server.
    port: 0,
    ...options,
  });
  let baseUrl: string | undefined;
  if (how.listen) baseUrl = (await server.start()).baseUrl;
  else await server.init();
  const t: TestServer = {
    server,
    baseUrl,
    dir,
    token: "admin-token-0123456789",
    api: (opts) => server.api.inject({ ...opts, url: rest(opts.url) }),
    async addUser(name) {
      const { token } = await server.services.auth.createUser(name);
      return token;
    },
    async activate(nodeId, userToken = t.token) {
      const res = await t.api({ method: "GET", url: `/block/${nodeId}/activate?user_access_token=${userToken}` });
      if (res.statusCode !== 200) throw new Error(`activation failed: ${res.statusCode} ${res.body}`);
      return (res.json() as { token: string }).token;
    },
    async close() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return t;
}
