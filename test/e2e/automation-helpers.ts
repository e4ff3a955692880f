/** A real server on loopback (port 0, temp dir) and small HTTP clients for the automation end-to-end tests. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { request } from "undici";
import { BlockkitServer, type ServerOptions, type StartedServer } from "../../server/controller.js";

export interface Live {
  server: BlockkitServer;
  urls: StartedServer;
  token: string;
  close(): Promise<void>;
}

export async function startLive(options: ServerOptions = {}): Promise<Live> {
  const dir = mkdtempSync(join(tmpdir(), "blockkit-e2e-auto-"));
  const server = new BlockkitServer({
    host: "127.0.0.1",
    port: 0,
    streamPort: 0,
    dataDir: dir,
    logger: pino({ level: "silent" }),
    adminToken: "e2e-admin-token-0123456789",
    pollHoldSeconds: 5,
    ...options,
  });
  const urls = await server.start();
  return {
    server,
    urls,
    token: "e2e-admin-token-0123456789",
    async close() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  json<T = unknown>(): T;
}

export async function call(
  method: "GET" | "POST" | "PUT" | "DELETE",
  url: string,
  opts: { json?: unknown; body?: Buffer; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | Buffer | undefined = opts.body;
  if (opts.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(opts.json);
  }
  const res = await request(url, { method, headers, body });
  const buf = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, headers: res.headers, body: buf, json: <T>() => JSON.parse(buf.toString()) as T };
}

/** The block side: activation with the user's token, data events and the commands long-poll. */
export class TestBlock {
  token = "";
  constructor(
    private readonly live: Live,
    readonly nodeId: string,
  ) {}

  async activate(): Promise<void> {
    const r = await call("GET", `${this.live.urls.baseUrl}/block/${this.nodeId}/activate?user_access_token=${this.live.token}`);
    this.token = r.json<{ token: string }>().token;
  }

  async data(D: number, DA: string, G = "0"): Promise<void> {
    const r = await call("POST", `${this.live.urls.baseUrl}/block/${this.nodeId}/data`, {
      json: { G, V: 0, D, DA },
      headers: { "x-service-token": this.token },
    });
    if (r.status !== 200) throw new Error(`data event refused: ${r.status} ${r.body.toString()}`);
  }

  async commands(): Promise<{ G: string; V: number; D: number; DA: string; GUID: string }[]> {
    const r = await call("GET", `${this.live.urls.baseUrl}/block/${this.nodeId}/commands`, { headers: { "x-service-token": this.token } });
    return r.json<{ DEVICE: { G: string; V: number; D: number; DA: string; GUID: string }[] }>().DEVICE;
  }
}
