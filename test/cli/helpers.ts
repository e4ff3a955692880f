/**
 * The CLI test harness: a real server on loopback (port 0, temp SQLite), the `blockkit` program run
 * in-process with captured stdout/stderr, and a block on the wire (BlockClient) to make devices.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { BlockClient, type WireReading } from "../../protocol/block-client.js";
import { runCli } from "../../cli/program.js";
import { BlockkitServer, type StartedServer } from "../../server/controller.js";

export const TOKEN = "cli-admin-token-0123456789";

export interface Live {
  server: BlockkitServer;
  urls: StartedServer;
  dir: string;
  /** Runs `blockkit ...args` against this server with --server/--token unless `bare`. */
  run(args: string[], opts?: RunOptions): Promise<RunResult>;
  /** A block activated for the admin user, able to send readings. */
  block(nodeId: string): Promise<TestBlock>;
  close(): Promise<void>;
}

export interface RunOptions {
  stdin?: string;
  env?: NodeJS.ProcessEnv;
  /** Do not add --server and --token. */
  bare?: boolean;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface TestBlock {
  client: BlockClient;
  token: string;
  send(D: number, DA: string, extra?: Partial<WireReading>): Promise<string>;
}

export async function startLive(): Promise<Live> {
  const dir = mkdtempSync(join(tmpdir(), "blockkit-cli-"));
  const server = new BlockkitServer({
    host: "127.0.0.1",
    port: 0,
    streamPort: 0,
    dataDir: dir,
    logger: pino({ level: "silent" }),
    adminToken: TOKEN,
    pollHoldSeconds: 2,
  });
  const urls = await server.start();
  const blocks: BlockClient[] = [];
  return {
    server,
    urls,
    dir,
    async run(args, opts = {}) {
      let stdout = "";
      let stderr = "";
      const target = opts.bare ? [] : ["--server", urls.authUrl, "--token", TOKEN];
      const code = await runCli(["node", "blockkit", ...args, ...target], {
        stdout: (t) => {
          stdout += t;
        },
        stderr: (t) => {
          stderr += t;
        },
        // A home of its own: profiles and the completion cache never touch the real one.
        env: { HOME: join(dir, "home"), ...opts.env },
        readStdin: () => (opts.stdin === undefined ? Promise.reject(new Error("no standard input")) : Promise.resolve(opts.stdin)),
      });
      return { code, stdout, stderr };
    },
    async block(nodeId) {
      const client = new BlockClient({ baseUrl: urls.baseUrl, streamUrl: urls.streamUrl, nodeId, holdTimeoutMs: 10_000 });
      blocks.push(client);
      const token = await client.activate({ userToken: TOKEN });
      if (!token) throw new Error("direct activation gave no token");
      return {
        client,
        token,
        async send(D, DA, extra = {}) {
          await client.data(token, { G: "0", V: 0, D, DA, ...extra });
          return `${nodeId}_0_0_${D}`;
        },
      };
    },
    async close() {
      await Promise.all(blocks.map((b) => b.close()));
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The lines of an output, without the final empty one. */
export function lines(text: string): string[] {
  return text.split("\n").filter((l) => l !== "");
}
