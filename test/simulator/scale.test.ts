/**
 * Past one core and one machine: `--workers` (one report merged from several processes),
 * `--shard i/n` + `sim merge` (n runs together are the scenario, one verdict), `--server` several
 * times (blocks round robin over the servers). Real servers on loopback, the real command.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiClient } from "../../protocol/api-client.js";
import { BlockkitServer } from "../../server/controller.js";
import { Latency } from "../../simulator/metrics/histogram.js";
import type { MergedReport } from "../../simulator/merge.js";

const TOKEN = "admin-token-0123456789";
const ROOT = join(import.meta.dirname, "..", "..");
const children = new Set<ChildProcess>();

function blockkit(args: string[], timeoutMs = 45_000): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "cli/index.ts", ...args], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
    children.add(child);
    let stderr = "";
    child.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`blockkit ${args.join(" ")} did not finish within ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, stderr });
    });
  });
}

describe("simulator past one process and one machine", () => {
  const servers: BlockkitServer[] = [];
  const urls: string[] = [];
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "blockkit-sim-scale-"));
    for (const name of ["a", "b"]) {
      const s = new BlockkitServer({ port: 0, streamPort: 0, dataDir: join(dir, name), adminToken: TOKEN, logger: pino({ level: "silent" }), pollHoldSeconds: 2 });
      urls.push((await s.start()).baseUrl);
      servers.push(s);
    }
  });

  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL");
    for (const s of servers) await s.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const api = (i = 0): ApiClient => new ApiClient({ baseUrl: urls[i] as string, token: TOKEN });
  const stored = async (prefix: string, i = 0): Promise<{ blocks: string[]; readings: number }> => {
    const blocks = Object.keys(await api(i).blocks()).filter((n) => n.startsWith(prefix));
    let readings = 0;
    for (const guid of Object.keys(await api(i).devices()).filter((g) => g.startsWith(prefix))) readings += (await api(i).history(guid, { from: 0 })).length;
    return { blocks, readings };
  };

  it("--workers 2: two processes, one report whose counts and histograms are both processes' together", { timeout: 60_000 }, async () => {
    const report = join(dir, "workers.json");
    const run = await blockkit(["sim", "--headless", "--server", urls[0] as string, "--token", TOKEN, "--blocks", "20", "--devices", "2", "--rate", "4", "--duration", "2", "--seed", "31", "--workers", "2", "--report", report, "--progress", "0.5"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain("2 worker processes, part 0/2, part 1/2");
    expect(run.stderr).toMatch(/\[0:0\d\/0:02\] blocks \d+\/20/);
    const r = JSON.parse(readFileSync(report, "utf8")) as MergedReport;
    expect(r.blocks).toEqual({ planned: 20, activated: 20, failed: 0, in_flight_at_stop: 0 });
    expect(r.parts.map((p) => [p.index, p.count, p.blocks])).toEqual([[0, 2, 10], [1, 2, 10]]);
    const s = await stored("SIM31N");
    expect(s.blocks).toHaveLength(20);
    expect(r.counts.events_acked).toBe(s.readings);
    // Every acknowledged reading of either process is in the merged histogram.
    expect(Latency.decode(r.histograms.ingest).count).toBe(r.latency_ms.ingest.count);
    expect(r.latency_ms.ingest.count).toBe(r.counts.events_acked);
  });

  it("--shard 0/2 and 1/2 run exactly the scenario; sim merge gives one verdict; a missing shard is refused", { timeout: 90_000 }, async () => {
    const scenario = join(dir, "sharded.yaml");
    writeFileSync(
      scenario,
      ["name: sharded", "seed: 5", "blocks: { count: 7, node_id: 'SHARD{seed}N{index:8}' }", "devices: [{ type: temperature, rate: 4 }, { type: relay }]", "commands: { rate: 2 }", "callbacks: { devices: 3 }", "duration_s: 2", "thresholds: ['events_acked > 30', 'errors == 0']"].join("\n"),
    );
    const reports = [join(dir, "shard0.json"), join(dir, "shard1.json")];
    const runs = await Promise.all(
      [0, 1].map((i) => blockkit(["sim", "--headless", "--server", urls[0] as string, "--token", TOKEN, "--scenario", scenario, "--shard", `${i}/2`, "--workers", "1", "--report", reports[i] as string])),
    );
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain("the thresholds are checked on the merge");
    }
    const shards = reports.map((f) => JSON.parse(readFileSync(f, "utf8")) as MergedReport);
    expect(shards.map((r) => r.blocks.planned)).toEqual([4, 3]);
    const s = await stored("SHARD5N");
    expect(s.blocks.sort()).toEqual(Array.from({ length: 7 }, (_v, i) => `SHARD5N${String(i).padStart(8, "0")}`));
    expect(shards.map((r) => r.counts.callback_devices)).toEqual([2, 1]);

    const merged = join(dir, "merged.json");
    const ok = await blockkit(["sim", "merge", ...reports, "--report", merged]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr).toContain("merged 2 reports: part 0/2 4 blocks, part 1/2 3 blocks");
    expect(ok.stderr).toMatch(/threshold ok {3}events_acked > 30 \(actual \d+\)/);
    const m = JSON.parse(readFileSync(merged, "utf8")) as MergedReport;
    expect(m.blocks).toEqual({ planned: 7, activated: 7, failed: 0, in_flight_at_stop: 0 });
    expect(m.counts.events_acked).toBe(s.readings);
    expect(m.counts.callback_devices).toBe(3);
    expect(m.latency_ms.ingest.count).toBe((shards[0]?.latency_ms.ingest.count ?? 0) + (shards[1]?.latency_ms.ingest.count ?? 0));

    const missing = await blockkit(["sim", "merge", reports[0] as string]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("a shard is missing");
    const twice = await blockkit(["sim", "merge", reports[0] as string, reports[0] as string, reports[1] as string]);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain("the parts overlap");
  });

  it("a shard cut short by a signal says so in its report, and the merge of it is not a pass", { timeout: 90_000 }, async () => {
    const scenario = join(dir, "cut.yaml");
    writeFileSync(scenario, ["name: cut", "seed: 6", "blocks: { count: 4, node_id: 'CUT{seed}N{index:8}' }", "devices: [{ type: temperature, rate: 4 }]", "duration_s: 3", "thresholds: ['errors == 0']"].join("\n"));
    const reports = [join(dir, "cut0.json"), join(dir, "cut1.json")];
    const args = (i: number): string[] => ["sim", "--headless", "--server", urls[0] as string, "--token", TOKEN, "--scenario", scenario, "--shard", `${i}/2`, "--workers", "1", "--report", reports[i] as string, "--progress", "0.2"];
    // Shard 0 gets SIGTERM once its measured time has begun (a progress line [m:ss/0:03]); shard 1 runs to its end.
    const cut = new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", "cli/index.ts", ...args(0)], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
      children.add(child);
      let stderr = "";
      let sent = false;
      const timer = setTimeout(() => reject(new Error(`the cut shard did not end within 45 s:\n${stderr}`)), 45_000);
      child.stderr?.on("data", (c: Buffer) => {
        stderr += c.toString();
        if (!sent && /^\[0:0\d\/0:03\]/m.test(stderr)) {
          sent = true;
          child.kill("SIGTERM");
        }
      });
      child.on("exit", (code) => {
        clearTimeout(timer);
        children.delete(child);
        resolve({ code, stderr });
      });
    });
    const [first, second] = await Promise.all([cut, blockkit(args(1))]);
    expect(first.code, first.stderr).toBe(143);
    expect(second.code, second.stderr).toBe(0);
    const shard0 = JSON.parse(readFileSync(reports[0] as string, "utf8")) as MergedReport;
    expect(shard0.interrupted).toEqual({ signal: "SIGTERM", during_start_up: false });
    expect(shard0.passed).toBe(false);
    expect((JSON.parse(readFileSync(reports[1] as string, "utf8")) as MergedReport).interrupted ?? null).toBeNull();

    const merged = join(dir, "cut-merged.json");
    const m = await blockkit(["sim", "merge", ...reports, "--report", merged]);
    // Before: exit 0, the thresholds (no error) passing on a part that measured less than asked.
    expect(m.code, m.stderr).toBe(1);
    expect(m.stderr).toContain("part 0/2 was interrupted (SIGTERM): the merge is not a pass");
    const doc = JSON.parse(readFileSync(merged, "utf8")) as MergedReport;
    expect(doc.passed).toBe(false);
    expect(doc.interrupted).toEqual({ signal: "SIGTERM", during_start_up: false });
    expect(doc.parts.map((p) => p.interrupted)).toEqual([{ signal: "SIGTERM", during_start_up: false }, null]);
  });

  it("--server twice: blocks round robin over the servers", { timeout: 60_000 }, async () => {
    const run = await blockkit(["sim", "--headless", "--server", urls[0] as string, "--server", urls[1] as string, "--token", TOKEN, "--blocks", "6", "--devices", "1", "--duration", "1", "--seed", "41", "--workers", "1"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain("blocks 6/6 activated");
    expect((await stored("SIM41N", 0)).blocks.sort()).toEqual(["SIM41N00000000", "SIM41N00000002", "SIM41N00000004"]);
    expect((await stored("SIM41N", 1)).blocks.sort()).toEqual(["SIM41N00000001", "SIM41N00000003", "SIM41N00000005"]);
  });
});
