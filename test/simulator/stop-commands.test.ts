/**
 * A command PUT still unanswered when a run stops. The stop says it waits up to --drain for the
 * commands in flight; before, it waited for such a PUT as long as the API client's own time limit
 * (15 s) whatever --drain said. Now the PUT is abandoned once the drain time ran out and counted as
 * unanswered at the stop (the server may still carry it out). A real server on loopback whose
 * command service takes the PUT and never ends it; the runner in this process.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SimRunner } from "../../simulator/runner.js";
import { summaryLines } from "../../simulator/report.js";
import { validateScenario } from "../../simulator/scenario/parse.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { waitFor } from "../helpers/wait.js";

describe("a command PUT in flight when the run stops", () => {
  let t: TestServer;
  let runner: SimRunner | null = null;
  let release: () => void = () => undefined;

  beforeEach(async () => {
    t = await startTestServer({}, { listen: true });
  });

  afterEach(async () => {
    release();
    await runner?.stop();
    runner = null;
    await t.close();
  });

  it("is waited for up to --drain, then abandoned and reported", { timeout: 30_000 }, async () => {
    const entered: string[] = [];
    const gate = new Promise<void>((r) => (release = r));
    const devices = t.server.services.devices;
    devices.actuate = async (row) => {
      entered.push(row.guid);
      await gate;
    };
    runner = new SimRunner({
      scenario: validateScenario({ seed: 95, blocks: { count: 1 }, devices: [{ type: "relay" }], duration_s: 60, commands: { rate: 20 }, callbacks: { devices: 0 } }),
      baseUrl: t.baseUrl as string,
      token: t.token,
      callbackHost: "127.0.0.1",
      drainTimeoutMs: 1_000,
    });
    const lines: string[] = [];
    runner.onLog((e) => void lines.push(e.text));
    await runner.start();
    await waitFor("a command PUT held by the server", () => entered.length > 0, 15_000);
    const stopAt = Date.now();
    runner.requestStop();
    const report = await runner.finished;
    await runner.stop();
    // Before: the PUT was waited for until the API client's 15 s time limit, whatever --drain said.
    expect(Date.now() - stopAt).toBeLessThan(5_000);
    // One device, one command at a time: the one held.
    expect(entered).toHaveLength(1);
    expect(report.counts.commands_put_unanswered_at_stop).toBe(1);
    expect(report.counts.errors).toBe(0);
    expect(summaryLines(report)[2]).toMatch(/^command round trip: no samples, 1 PUT unanswered at the stop$/);
    expect(lines).toContain("1 command PUT was still unanswered after 1 s: the server may carry it out after the run");
  });
});
