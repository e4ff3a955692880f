/**
 * `blockkit server` as a real process under repeated signals: a second SIGTERM while it stops is
 * the same request (held polls are answered, the store is closed: no WAL left, exit 0); a second
 * SIGINT stops faster, and still closes the store.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { once } from "node:events";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { type CliProcess, startServerProcess } from "../helpers/process.js";

const TOKEN = "admin-token-signals-0123";
const dirs: string[] = [];
const procs: CliProcess[] = [];
afterEach(() => {
  for (const p of procs.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function serverWithHeldPoll(): Promise<{ p: CliProcess & { baseUrl: string }; dir: string; poll: Promise<number>; token: string }> {
  const dir = mkdtempSync(join(tmpdir(), "blockkit-signals-"));
  dirs.push(dir);
  const p = await startServerProcess({ dataDir: dir, adminToken: TOKEN, pollHoldSeconds: 20 });
  procs.push(p);
  const act = await request(`${p.baseUrl}/block/SIGNALS00001/activate?user_access_token=${TOKEN}`);
  const { token } = (await act.body.json()) as { token: string };
  const poll = request(`${p.baseUrl}/block/SIGNALS00001/commands`, { headers: { "x-service-token": token } }).then(async (r) => {
    await r.body.text();
    return r.statusCode;
  });
  // The poll is held once the server says so on /healthz.
  for (let i = 0; i < 200; i++) {
    const h = (await (await request(`${p.baseUrl.replace(/\/rest\/v0$/, "")}/healthz`)).body.json()) as { heldPolls: number };
    if (h.heldPolls === 1) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  return { p, dir, poll, token };
}

describe("blockkit server under repeated signals", () => {
  it("takes a second SIGTERM during the stop as the same request", { timeout: 40_000 }, async () => {
    const { p, dir, poll, token } = await serverWithHeldPoll();
    // A request whose body is half sent holds the stop open (in-flight requests are finished), so
    // the further SIGTERMs surely arrive during the stop, however fast the rest of it is.
    const url = new URL(p.baseUrl);
    const body = JSON.stringify({ G: "0", V: 0, D: 1, DA: "1" });
    const sock = connect(Number(url.port), url.hostname);
    await once(sock, "connect");
    let text = "";
    const answer = new Promise<string>((resolve) => {
      sock.on("data", (c: Buffer) => (text += c.toString()));
      sock.on("close", () => resolve(text));
    });
    // A write after the server closed its side fails with EPIPE; the answer read before is what counts.
    sock.on("error", () => {});
    // With Expect: 100-continue, Node's HTTP server writes "100 Continue" as it hands the request
    // to the app: from then on the request is in flight, and the SIGTERM cannot overtake it.
    sock.write(`POST ${url.pathname}/block/SIGNALS00001/data HTTP/1.1\r\nHost: ${url.host}\r\nX-Service-Token: ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`);
    while (!text.includes("\r\n\r\n")) await once(sock, "data");
    expect(text).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
    sock.write(body.slice(0, 5));
    p.child.kill("SIGTERM");
    await p.waitForErrLine(/"msg":"stopping"/);
    p.child.kill("SIGTERM");
    await p.waitForErrLine(/already stopping/);
    p.child.kill("SIGTERM");
    sock.write(body.slice(5));
    // Answered, not cut: stored (200) or refused as the server stops (503, for the block to send again).
    expect(await answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 (200 OK|503 Service Unavailable)\r\n/);
    expect(await p.exited).toBe(0);
    expect(await poll).toBe(200);
    expect(existsSync(join(dir, "blockkit.db-wal"))).toBe(false);
  });

  it("stops faster on a second SIGINT, still closing the store", { timeout: 40_000 }, async () => {
    const { p, dir, poll } = await serverWithHeldPoll();
    p.child.kill("SIGINT");
    await p.waitForErrLine(/"msg":"stopping"/);
    p.child.kill("SIGINT");
    expect(await p.exited).toBe(0);
    await poll.catch(() => 0);
    expect(existsSync(join(dir, "blockkit.db-wal"))).toBe(false);
    expect(p.stderr.join("\n")).toMatch(/second SIGINT/);
  });
});
