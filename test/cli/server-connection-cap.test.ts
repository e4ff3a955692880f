/**
 * `blockkit server --max-connections-per-address N` (and BLOCKKIT_MAX_CONNECTIONS_PER_ADDRESS) in a
 * real process: the N+1-th open connection from one address is reset at accept while another
 * address is still served, and a value that is not a whole number of at least 1 stops the start
 * with exit 2 naming the flag (or the variable). Peers come from 127.0.0.2 and 127.0.0.3: the
 * machine's own 127.0.0.1 is never capped per address.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { spawnCli, startServerProcess, stopProcess } from "../helpers/process.js";
import { type Peer, healthz, peer } from "../server/limits/raw-peers.js";

const root = mkdtempSync(join(tmpdir(), "blockkit-conn-cap-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let open: Peer[] = [];
afterEach(() => {
  for (const p of open) p.socket.destroy();
  open = [];
});

/**
 * Opens `n` idle connections from `from`, then the next one, which should be reset; returns it once
 * it closed, after each of the first `n` was served a request (a connect is seen before the server
 * accepts, so only an answer shows that a connection was let in: a cap set one too low fails here).
 */
async function fill(port: number, n: number, from: string): Promise<Peer> {
  const first: Peer[] = [];
  for (let i = 0; i < n; i++) {
    const p = await peer(port, "", from);
    open.push(p);
    first.push(p);
  }
  const over = await peer(port, "", from);
  open.push(over);
  await over.closed;
  for (const [i, p] of first.entries()) {
    p.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    await p.closed;
    expect(p.text().split("\r\n")[0], `connection ${i + 1} of ${n}`).toBe("HTTP/1.1 200 OK");
  }
  return over;
}

describe("blockkit server --max-connections-per-address", () => {
  it("refuses the connection past the cap from one address, by the flag and by the variable", { timeout: 40_000 }, async () => {
    const started = await Promise.allSettled([
      startServerProcess({ dataDir: join(root, "flag"), adminToken: "conn-cap-token-0123456", extraArgs: ["--max-connections-per-address", "3"] }),
      startServerProcess({ dataDir: join(root, "env"), adminToken: "conn-cap-token-0123456", env: { BLOCKKIT_MAX_CONNECTIONS_PER_ADDRESS: "2" } }),
    ]);
    const procs = started.filter((r) => r.status === "fulfilled").map((r) => r.value);
    try {
      for (const r of started) if (r.status === "rejected") throw r.reason;
      for (const [p, cap] of procs.map((p, i) => [p, i === 0 ? 3 : 2] as const)) {
        const port = Number(new URL(p.baseUrl).port);
        const over = await fill(port, cap, "127.0.0.2");
        expect(over.error(), `cap ${cap}`).toBe("ECONNRESET");
        expect(over.text()).toBe("");
        // Another address is not held to the first one's connections.
        expect(await healthz(port, "127.0.0.3")).toBe("HTTP/1.1 200 OK");
        for (const c of open) c.socket.destroy();
        open = [];
      }
    } finally {
      expect(await Promise.all(procs.map((p) => stopProcess(p)))).toEqual([0, 0]);
    }
  });

  it("refuses a value that is not a whole number of at least 1, naming the flag or the variable", { timeout: 40_000 }, async () => {
    const args = (dir: string): string[] => ["server", "--port", "0", "--stream-port", "0", "--data", join(root, dir)];
    const bad = ["0", "-1", "1.5", "many", "99999999999999999999"];
    const flags = bad.map((v, i) => spawnCli([...args(`bad${i}`), "--max-connections-per-address", v]));
    const env = spawnCli(args("badenv"), { BLOCKKIT_MAX_CONNECTIONS_PER_ADDRESS: "0" });
    const all = [...flags, env];
    // A start that is not refused would run on: it is stopped once the others have exited.
    const codes = await Promise.race([Promise.all(all.map((p) => p.exited)), new Promise<null>((r) => setTimeout(() => r(null), 20_000).unref())]);
    for (const p of all) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
    expect(codes).toEqual(bad.map(() => 2).concat(2));
    flags.forEach((p, i) => {
      expect(p.stderr.join("\n"), bad[i]).toMatch(new RegExp(`--max-connections-per-address.*"${(bad[i] as string).replace(".", "\\.")}" is not a positive whole number`));
    });
    expect(env.stderr.join("\n")).toMatch(/BLOCKKIT_MAX_CONNECTIONS_PER_ADDRESS: "0" is not a positive whole number/);
  });

  it("is in --help", async () => {
    const help = spawnCli(["server", "--help"]);
    expect(await help.exited).toBe(0);
    expect(help.stdout.join("\n")).toMatch(/--max-connections-per-address <n>\s+open connections from one address/);
  });
});
