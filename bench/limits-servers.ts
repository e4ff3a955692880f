/**
 * The servers of the limits bench (bench/limits.bench.ts) as its two parts reach them: the admin
 * token and node ids, the monitor's GET on a kept-alive agent, a build of another commit's server to
 * compare against, and what the hold part reads of a server while it runs (held polls, open
 * connections and limit hits from /healthz and /metrics, RSS and fds, and from Linux /proc the
 * listener's dropped connections and a process's CPU time and run-queue wait). Apart so that the
 * hold part (limits.bench.ts) and the cost part (limits-cost.ts) share it without importing each
 * other, and the parts read as the steps they take.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, symlinkSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Proc, fdsOf, rssOf } from "./fixtures/procs.js";

export const ADMIN = "bench-admin-token-limits-0001";
export const root = join(import.meta.dirname, "..");
export const nodeId = (i: number): string => `LIMIT${String(i).padStart(8, "0")}`;
export const monitorAgent = new http.Agent({ keepAlive: true, maxSockets: 2 });

export function get(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path, agent: monitorAgent, timeout: 5000 }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`GET ${path}: ${res.statusCode} ${text}`))));
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${path}: no answer in 5 s`)));
    req.on("error", reject);
  });
}

/** A build of `commit` (dist/ and this tree's node_modules) in a temporary folder, kept between runs. */
export function buildOf(ref: string): string {
  const commit = execFileSync("git", ["-C", root, "rev-parse", ref], { encoding: "utf8" }).trim();
  const dir = join(tmpdir(), `bk-bench-build-${commit.slice(0, 12)}`);
  if (existsSync(join(dir, "dist", "cli", "index.js"))) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  process.stdout.write(`building ${commit.slice(0, 12)} in ${dir}\n`);
  execFileSync("sh", ["-c", `git -C "${root}" archive ${commit} | tar -x -C "${dir}"`], { stdio: "inherit" });
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"], { cwd: dir, stdio: "inherit" });
  return dir;
}

export interface Tick {
  t: number;
  held: number;
  open: number;
  rss: number;
  fds: number;
  hits: Record<string, number>;
}

/** `scrape`: read /metrics too (it costs the server a readdir of its 10,000 fds: not every second). */
export async function tick(srv: Proc, scrape: boolean): Promise<Tick> {
  const pid = srv.child.pid as number;
  const [health, metrics, rss, fds] = await Promise.all([
    get(srv.port, "/healthz").then((t) => JSON.parse(t) as { heldPolls: number }).catch(() => ({ heldPolls: Number.NaN })),
    scrape ? get(srv.port, "/metrics").catch(() => "") : "",
    rssOf(pid),
    fdsOf(pid),
  ]);
  const hits: Record<string, number> = {};
  for (const m of metrics.matchAll(/^blockkit_limit_hits_total\{limit="(\w+)"\} (\d+)/gm)) hits[m[1] as string] = Number(m[2]);
  const open = /^blockkit_open_connections (\d+)/m.exec(metrics);
  return { t: Date.now(), held: health.heldPolls, open: open ? Number(open[1]) : Number.NaN, rss, fds, hits };
}

/** TcpExt ListenDrops of this network namespace: SYNs or handshakes a listener dropped (a full accept queue, ListenOverflows, is one cause). */
export async function listenDrops(): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  const lines = (await readFile("/proc/net/netstat", "utf8")).split("\n").filter((l) => l.startsWith("TcpExt:"));
  const names = (lines[0] ?? "").split(" ");
  const values = (lines[1] ?? "").split(" ");
  return Number(values[names.indexOf("ListenDrops")] ?? 0);
}

/** Seconds a process has waited on a run queue for a CPU so far (Linux /proc schedstat). */
export async function waitedOf(pid: number): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  return Number((await readFile(`/proc/${pid}/schedstat`, "utf8")).split(" ")[1]) / 1e9;
}

/** CPU seconds (user + system) a process used so far (Linux /proc). */
export async function cpuOf(pid: number): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  const f = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]?.split(" ") ?? [];
  return (Number(f[11]) + Number(f[12])) / 100;
}
