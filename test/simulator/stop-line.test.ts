/**
 * The first Ctrl-C of `blockkit sim` says what the stop waits for and how long at most, and that a
 * second one quits at once, with or without --cleanup (docs/simulator.md, exit codes). The server is
 * a double on loopback that never answers: the block's activation request stays in flight, so the
 * drain waits its whole --drain for it. Before, a run without --cleanup waited so in silence.
 * The cleanup has a bound of its own (--cleanup-timeout): before, its unpair of the block waited the
 * API client's whole 15 s time limit, and with more blocks as many times over.
 * The run is the real CLI process (without the respawn, BLOCKKIT_SIM_CHILD=1, so that the SIGINT
 * sent to it is the one the terminal would send to the whole group).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type CliProcess, spawnCli, stopProcess } from "../helpers/process.js";
import { loopbackServer } from "../helpers/http.js";
import { waitFor } from "../helpers/wait.js";

describe("blockkit sim's first Ctrl-C against a hung server", () => {
  let server: Awaited<ReturnType<typeof loopbackServer>>;
  let url: string;
  /** The requests the server received (and holds, unanswered). */
  const held: { req: IncomingMessage; res: ServerResponse }[] = [];
  let run: CliProcess | null = null;

  beforeEach(async () => {
    held.length = 0;
    server = await loopbackServer((req, res) => void held.push({ req, res }));
    url = server.url;
  });

  afterEach(async () => {
    if (run) await stopProcess(run, "SIGKILL").catch(() => undefined);
    run = null;
    await server.close();
  });

  /** Starts a one-block run against the hung server and waits until its activation request is held there. */
  const start = async (extra: string[]): Promise<CliProcess> => {
    const args = ["sim", "--headless", "--server", url, "--token", "user-token", "--blocks", "1", "--devices", "1", "--duration", "60", "--commands", "0", "--callbacks", "0", "--seed", "91", ...extra];
    run = spawnCli(args, { BLOCKKIT_SIM_CHILD: "1" });
    await waitFor("the block's activation request held by the server", () => held.some((h) => /\/activate\?/.test(h.req.url ?? "")), 15_000);
    return run;
  };

  it("without --cleanup, says it waits up to --drain for what is in flight; a second Ctrl-C quits at once", { timeout: 40_000 }, async () => {
    const p = await start(["--drain", "20"]);
    p.child.kill("SIGINT");
    // Before: no line at all, and the run sat through its 20 s drain.
    await p.waitForErrLine(/^stopping: waiting up to 20 s for the activations, readings and commands in flight \(Ctrl-C again to quit at once\)$/, 10_000);
    expect(p.stdout.join("\n")).not.toContain("stopping");
    // Well before the 20 s of the drain are over.
    expect(await stopProcess(p, "SIGINT", 5_000)).toBe(130);
    expect(p.stderr.filter((l) => l.startsWith("stopping:"))).toHaveLength(1);
  });

  it("with --cleanup, says the cleanup follows; a second Ctrl-C quits before it, naming the command that does it later", { timeout: 40_000 }, async () => {
    const p = await start(["--drain", "20", "--cleanup"]);
    p.child.kill("SIGINT");
    await p.waitForErrLine(/^stopping: waiting up to 20 s for the activations, readings and commands in flight, then cleaning up for up to 30 s \(Ctrl-C again to quit at once\)$/, 10_000);
    expect(await stopProcess(p, "SIGINT", 5_000)).toBe(130);
    expect(p.stderr).toContain("blockkit sim: quit before the cleanup; remove the leftovers with: blockkit sim cleanup --node-prefix SIM91N");
  });

  it("with --cleanup-timeout, the cleanup ends within its bound and names what is left and the command that finishes it", { timeout: 40_000 }, async () => {
    const p = await start(["--drain", "1", "--cleanup", "--cleanup-timeout", "2"]);
    const stopAt = Date.now();
    p.child.kill("SIGINT");
    await p.waitForErrLine(/^stopping: waiting up to 1 s for the activations, readings and commands in flight, then cleaning up for up to 2 s \(Ctrl-C again to quit at once\)$/, 10_000);
    // Before: no bound, the unpair waited the API client's 15 s.
    await p.waitForErrLine(/^finish it with: blockkit sim cleanup --node-prefix SIM91N$/, 10_000);
    expect(await stopProcess(p, "SIGTERM", 5_000)).toBe(130);
    expect(Date.now() - stopAt).toBeLessThan(10_000);
    // The unpair was asked (the server holds it) and abandoned at the bound.
    expect(held.some((h) => h.req.method === "DELETE" && /\/block\/SIM91N00000000/.test(h.req.url ?? ""))).toBe(true);
    const cleanup = p.stderr.filter((l) => l.startsWith("cleanup"));
    expect(cleanup).toEqual([
      "cleanup: 0 blocks unpaired, 0 callbacks removed",
      "cleanup: not finished within 2 s (--cleanup-timeout): 1 block and 0 callbacks not cleaned up",
      "cleanup left: block SIM91N00000000",
    ]);
  });
});
