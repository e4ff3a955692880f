/**
 * `blockkit server --trust-proxy` (and BLOCKKIT_TRUST_PROXY) in a real process: a bad value stops
 * the start with exit 2 naming it, trusting every hop is refused with why, and a given proxy's
 * X-Forwarded-For is believed (a request from loopback carrying it is a request through a proxy).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { spawnCli, startServerProcess, stopProcess } from "../helpers/process.js";

const root = mkdtempSync(join(tmpdir(), "blockkit-trust-proxy-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const serverArgs = (dir: string): string[] => ["server", "--port", "0", "--stream-port", "0", "--data", join(root, dir)];

describe("blockkit server --trust-proxy", () => {
  it("refuses a value that is not addresses or networks, and trusting every hop, naming the item", { timeout: 40_000 }, async () => {
    const bad = spawnCli([...serverArgs("a"), "--trust-proxy", "127.0.0.1,10.0.0.0/33"]);
    const every = spawnCli([...serverArgs("b"), "--trust-proxy", "*"]);
    const env = spawnCli(serverArgs("c"), { BLOCKKIT_TRUST_PROXY: "::1, nginx" });
    const [badCode, everyCode, envCode] = await Promise.all([bad.exited, every.exited, env.exited]);
    expect(badCode).toBe(2);
    expect(bad.stderr.join("\n")).toMatch(/--trust-proxy.*"10\.0\.0\.0\/33" is not a proxy's address or network: give an address or address\/prefix/);
    expect(everyCode).toBe(2);
    expect(every.stderr.join("\n")).toMatch(/"\*" is refused: trusting every hop lets any client choose its own address, since X-Forwarded-For is whatever the client sends/);
    expect(envCode).toBe(2);
    expect(env.stderr.join("\n")).toMatch(/BLOCKKIT_TRUST_PROXY: "nginx" is not a proxy's address or network/);
  });

  it("refuses a public URL that is not an http(s) address alone, naming the flag or the variable", { timeout: 40_000 }, async () => {
    const url = spawnCli([...serverArgs("g"), "--public-url", "hub.example"]);
    const stream = spawnCli([...serverArgs("h"), "--public-stream-url", "https://hub.example:8443/?x=1"]);
    const env = spawnCli(serverArgs("i"), { BLOCKKIT_PUBLIC_STREAM_URL: "ftp://hub.example" });
    const all = [url, stream, env];
    // A start that is not refused would run on: it is stopped once the others have exited.
    const codes = await Promise.race([Promise.all(all.map((p) => p.exited)), new Promise<null>((r) => setTimeout(() => r(null), 20_000).unref())]);
    for (const p of all) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
    expect(codes).toEqual([2, 2, 2]);
    expect(url.stderr.join("\n")).toMatch(/--public-url.*"hub\.example" is not a URL: give the address clients use/);
    expect(stream.stderr.join("\n")).toMatch(/--public-stream-url.*has a query or fragment: give the address alone/);
    expect(env.stderr.join("\n")).toMatch(/BLOCKKIT_PUBLIC_STREAM_URL: "ftp:\/\/hub\.example" is not an http or https URL/);
  });

  it("believes the given proxy's X-Forwarded-For: /metrics refuses the remote client behind it, and the unforwarded", { timeout: 40_000 }, async () => {
    const [flag, env] = await Promise.all([
      startServerProcess({ dataDir: join(root, "d"), adminToken: "trust-proxy-token-01234", extraArgs: ["--trust-proxy", "127.0.0.1"] }),
      startServerProcess({ dataDir: join(root, "e"), adminToken: "trust-proxy-token-01234", env: { BLOCKKIT_TRUST_PROXY: "127.0.0.0/8,::1" } }),
    ]);
    try {
      for (const p of [flag, env]) {
        const metrics = `${new URL(p.baseUrl).origin}/metrics`;
        const remote = await fetch(metrics, { headers: { "x-forwarded-for": "127.0.0.1, 203.0.113.5" } });
        expect(remote.status).toBe(403);
        expect(await remote.text()).toContain("metrics are served to loopback clients only");
        const throughProxy = await fetch(metrics, { headers: { "x-forwarded-for": "127.0.0.1" } });
        expect(throughProxy.status).toBe(200);
        await throughProxy.arrayBuffer();
        // From the trusted loopback without X-Forwarded-For: maybe the proxy carrying anyone.
        const unforwarded = await fetch(metrics);
        expect(unforwarded.status).toBe(403);
        await unforwarded.arrayBuffer();
        // Said at start, once, without the token (none is set here).
        const line = (await p.waitForErrLine(/--trust-proxy trusts loopback and no --metrics-token is set/)).input as string;
        expect(JSON.parse(line)).toMatchObject({ level: 40, module: "srv:http" });
      }
    } finally {
      expect(await Promise.all([stopProcess(flag), stopProcess(env)])).toEqual([0, 0]);
    }
  });

  it("says nothing of /metrics at start when a metrics token is set, and the token scrapes", { timeout: 40_000 }, async () => {
    const p = await startServerProcess({
      dataDir: join(root, "f"),
      adminToken: "trust-proxy-token-01234",
      extraArgs: ["--trust-proxy", "127.0.0.1", "--metrics-token", "trust-proxy-metrics-0123"],
    });
    try {
      const res = await fetch(`${new URL(p.baseUrl).origin}/metrics`, { headers: { authorization: "Bearer trust-proxy-metrics-0123" } });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    } finally {
      expect(await stopProcess(p)).toBe(0);
    }
    expect(p.stderr.join("\n")).not.toMatch(/trusts loopback/);
    expect(p.stderr.join("\n")).not.toContain("trust-proxy-metrics-0123");
  });
});
