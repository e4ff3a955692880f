/**
 * The CLI test harness: a real server on loopback (port 0, temp SQLite), the `blockkit` program run
 * in-process with captured stdout/stderr, and a block on the wire (BlockClient) to make devices.
 */
import { join } from "node:path";
import { BlockClient, type WireReading } from "../../protocol/block-client.js";
import { runCli } from "../../cli/program.js";
import { ADMIN_TOKEN, type LiveServer, startLive } from "../helpers/live.js";

/** The live server (test/helpers/live.ts) and the command line run against it. */
export interface Live extends LiveServer {
  /** Runs `blockkit ...args` against this server with --server/--token unless `bare`. */
  run(args: string[], opts?: RunOptions): Promise<RunResult>;
  /** A block activated for the admin user, able to send readings. */
  block(nodeId: string): Promise<TestBlock>;
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

export async function startCli(): Promise<Live> {
  const live = await startLive();
  const blocks: BlockClient[] = [];
  const stop = live.close;
  return Object.assign(live, {
    async run(args: string[], opts: RunOptions = {}): Promise<RunResult> {
      let stdout = "";
      let stderr = "";
      const target = opts.bare ? [] : ["--server", live.authUrl, "--token", ADMIN_TOKEN];
      const code = await runCli(["node", "blockkit", ...args, ...target], {
        stdout: (t) => {
          stdout += t;
        },
        stderr: (t) => {
          stderr += t;
        },
        // A home of its own: profiles and the completion cache never touch the real one.
        env: { HOME: join(live.dir, "home"), ...opts.env },
        readStdin: () => (opts.stdin === undefined ? Promise.reject(new Error("no standard input")) : Promise.resolve(opts.stdin)),
      });
      return { code, stdout, stderr };
    },
    async block(nodeId: string): Promise<TestBlock> {
      const client = new BlockClient({ baseUrl: live.baseUrl, streamUrl: live.streamUrl, nodeId, holdTimeoutMs: 10_000 });
      blocks.push(client);
      const token = await client.activate({ userToken: ADMIN_TOKEN });
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
    async close(opts?: { keepDir?: boolean }): Promise<void> {
      await Promise.all(blocks.map((b) => b.close()));
      await stop(opts);
    },
  });
}

/** The lines of an output, without the final empty one. */
export function lines(text: string): string[] {
  return text.split("\n").filter((l) => l !== "");
}
