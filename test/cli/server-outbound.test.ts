/**
 * `blockkit server --outbound-allow/--outbound-deny` (and their environment variables) in a real
 * process: malformed networks stop the start naming the value, a given deny list holds.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type Receiver, startReceiver } from "../server/automation/helpers.js";
import { spawnCli, startServerProcess, stopProcess } from "../helpers/process.js";

const root = mkdtempSync(join(tmpdir(), "blockkit-outbound-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Env<T = unknown> {
  result: number;
  error: string | null;
  data: T;
}

describe("blockkit server outbound options", () => {
  it("refuses a malformed network from a flag or the environment, naming it", { timeout: 40_000 }, async () => {
    const flag = spawnCli(["server", "--port", "0", "--stream-port", "0", "--data", join(root, "a"), "--outbound-allow", "10.0.0.0/33"]);
    const env = spawnCli(["server", "--port", "0", "--stream-port", "0", "--data", join(root, "b")], { BLOCKKIT_OUTBOUND_DENY: "10.0.0.0/8, nope" });
    const [flagCode, envCode] = await Promise.all([flag.exited, env.exited]);
    expect(flagCode).not.toBe(0);
    expect(flag.stderr.join("\n")).toMatch(/"10\.0\.0\.0\/33" is not a network/);
    expect(envCode).not.toBe(0);
    expect(env.stderr.join("\n")).toMatch(/BLOCKKIT_OUTBOUND_DENY: "nope" is not a network/);
  });

  it("keeps webhook calls out of a --outbound-deny network", { timeout: 40_000 }, async () => {
    const receiver: Receiver = await startReceiver();
    const p = await startServerProcess({ dataDir: join(root, "c"), adminToken: "outbound-token-0123456", extraArgs: ["--outbound-deny", "10.0.0.0/8,127.0.0.0/8"] });
    try {
      const q = "user_access_token=outbound-token-0123456";
      const call = async (method: string, url: string, body?: unknown) => {
        const res = await fetch(url, { method, headers: body ? { "content-type": "application/json" } : {}, body: body ? JSON.stringify(body) : undefined });
        return { status: res.status, json: (await res.json()) as Env<{ guid: string; id: string }> };
      };
      const auth = p.baseUrl.replace(/\/rest\/v0$/, "");
      const hooks = (await call("GET", `${auth}/auth/webhook?${q}`)).json.data.guid;
      // A literal address in the denied network is refused when registered, naming the rule.
      const literal = await call("POST", `${p.baseUrl}/device/${hooks}/subdevice?${q}`, { category: "webhook", type: "actuator", shortName: "Lamp", data: "lamp", url: `${receiver.url}/lamp` });
      expect(literal.status).toBe(400);
      expect(literal.json.error).toMatch(/^webhook url "http:\/\/127\.0\.0\.1:\d+\/lamp" is refused: 127\.0\.0\.1:\d+ is in a denied network \(127\.0\.0\.0\/8\)/);
      // A name (localhost: ::1 is not denied) is accepted, and checked at connect.
      const named = receiver.url.replace("127.0.0.1", "localhost");
      const made = await call("POST", `${p.baseUrl}/device/${hooks}/subdevice?${q}`, { category: "webhook", type: "actuator", shortName: "Lamp", data: "lamp", url: `${named}/lamp` });
      expect(made.status).toBe(200);
      const res = await call("PUT", `${p.baseUrl}/device/${hooks}?${q}`, { DA: "lamp" });
      expect(res.status).toBe(503);
      expect(res.json.error).toBe(`webhook actuator ${made.json.data.id}: the call failed (no 2xx answer within 5000 ms)`);
      expect(receiver.received).toHaveLength(0);
    } finally {
      expect(await stopProcess(p)).toBe(0);
      await receiver.close();
    }
  });
});
