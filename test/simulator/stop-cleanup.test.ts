/**
 * A second Ctrl-C during the cleanup of `blockkit sim --cleanup` quits at once, and names what it
 * leaves as the cleanup's time bound does (how many blocks and callbacks, which, and the command that
 * finishes it). Before, it printed only the command, and said "quit before the cleanup" of a cleanup
 * half done. A real server on loopback behind a proxy that forwards everything but the unpairs, which
 * it holds unanswered: the callback is removed, the blocks stay paired. The run is the real CLI
 * process (without the respawn, BLOCKKIT_SIM_CHILD=1), sent real SIGINTs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { type IncomingMessage, type ServerResponse, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiClient } from "../../protocol/api-client.js";
import { BlockkitServer } from "../../server/controller.js";
import { loopbackServer } from "../helpers/http.js";
import { type CliProcess, spawnCli, stopProcess } from "../helpers/process.js";
import { waitFor } from "../helpers/wait.js";

const TOKEN = "admin-token-0123456789";

describe("blockkit sim's second Ctrl-C during the cleanup", () => {
  let dir: string;
  let server: BlockkitServer;
  let api: ApiClient;
  let proxy: Awaited<ReturnType<typeof loopbackServer>>;
  /** The unpairs the proxy holds, unanswered. */
  const held: { req: IncomingMessage; res: ServerResponse }[] = [];
  let run: CliProcess | null = null;

  beforeEach(async () => {
    held.length = 0;
    dir = mkdtempSync(join(tmpdir(), "blockkit-sim-quit-"));
    server = new BlockkitServer({ port: 0, streamPort: 0, dataDir: join(dir, "data"), adminToken: TOKEN, logger: pino({ level: "silent" }), pollHoldSeconds: 2 });
    const { baseUrl } = await server.start();
    api = new ApiClient({ baseUrl, token: TOKEN });
    const upstream = new URL(baseUrl);
    proxy = await loopbackServer((req, res) => {
      if (req.method === "DELETE" && /\/block\//.test(req.url ?? "")) return void held.push({ req, res });
      const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      out.on("error", () => res.destroy());
      req.pipe(out);
    });
  });

  afterEach(async () => {
    if (run) await stopProcess(run, "SIGKILL").catch(() => undefined);
    run = null;
    await proxy.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  // In the process that runs the fleet (BLOCKKIT_SIM_CHILD=1: no respawn), and through the respawning
  // parent alone (`kill -INT PID` twice: the second was ignored, and the cleanup ran on to its bound).
  it.each([
    { how: "Ctrl-C in the fleet's process", env: { BLOCKKIT_SIM_CHILD: "1" } },
    { how: "SIGINT to the respawning parent alone", env: { BLOCKKIT_SIM_CHILD: "" } },
  ])("names the blocks still paired and the callbacks removed, then the command that finishes it ($how)", { timeout: 60_000 }, async ({ env }) => {
    const args = ["sim", "--headless", "--server", proxy.url, "--token", TOKEN, "--blocks", "3", "--devices", "1", "--duration", "60", "--commands", "0", "--callbacks", "1", "--seed", "93", "--drain", "1", "--progress", "0.2", "--cleanup"];
    const p = spawnCli(args, env);
    run = p;
    // All three blocks activated, and a callback delivered: the callback is registered.
    await p.waitForErrLine(/ blocks 3\/3 .* cb [1-9]/, 20_000);
    p.child.kill("SIGINT");
    await p.waitForErrLine(/^stopping: /, 10_000);
    // The callback was removed (the callbacks go first), and the three unpairs are held at the proxy.
    await waitFor("the three unpairs held by the proxy", () => held.length === 3, 15_000);
    expect(await stopProcess(p, "SIGINT", 5_000)).toBe(130);
    const lines = p.stderr.filter((l) => /^(cleanup|finish it|blockkit sim:)/.test(l));
    // Before: only "blockkit sim: quit before the cleanup; remove the leftovers with: …".
    expect(lines.slice(0, 2)).toEqual(["cleanup: 0 blocks unpaired, 1 callbacks removed", expect.stringMatching(/^cleanup: quit at the second Ctrl-C after [\d.]+ s: 3 blocks and 0 callbacks not cleaned up$/)]);
    expect(lines.slice(2, 5).sort()).toEqual(["cleanup left: block SIM93N00000000", "cleanup left: block SIM93N00000001", "cleanup left: block SIM93N00000002"]);
    expect(lines.slice(5)).toEqual(["finish it with: blockkit sim cleanup --node-prefix SIM93N"]);
    // What it says is so: the blocks are still paired.
    expect(Object.keys(await api.blocks()).filter((n) => n.startsWith("SIM93N")).sort()).toEqual(["SIM93N00000000", "SIM93N00000001", "SIM93N00000002"]);
  });
});
