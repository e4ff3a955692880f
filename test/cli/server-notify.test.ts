/**
 * `blockkit server` under systemd's Type=notify: READY=1 once it listens and prints its URLs,
 * STOPPING=1 on SIGTERM (received on a real unix datagram socket, through socat).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { spawnCli, stopProcess } from "../helpers/process.js";

const dir = mkdtempSync(join(tmpdir(), "blockkit-notify-"));
let recv: ChildProcess | undefined;
afterAll(() => {
  recv?.kill();
  rmSync(dir, { recursive: true, force: true });
});

it("tells systemd it is ready once it listens, and that it stops on SIGTERM", async () => {
  const sock = join(dir, "notify.sock");
  let got = "";
  recv = spawn("socat", ["-u", `UNIX-RECV:${sock}`, "STDOUT"], { stdio: ["ignore", "pipe", "ignore"] });
  recv.stdout?.on("data", (c: Buffer) => (got += c.toString()));
  await expect.poll(() => existsSync(sock), { timeout: 5000 }).toBe(true);
  // Ports the kernel picks: ports picked beforehand (free a moment ago) can be taken by another test meanwhile.
  const p = spawnCli(["server", "--port", "0", "--stream-port", "0", "--data", join(dir, "data"), "--admin-token", "notify-token-0123456"], { NOTIFY_SOCKET: sock });
  await p.waitForLine(/blockkit server ready/, 20_000);
  await expect.poll(() => got, { timeout: 10_000 }).toContain("READY=1");
  expect(await stopProcess(p, "SIGTERM")).toBe(0);
  await expect.poll(() => got, { timeout: 5000 }).toContain("STOPPING=1");
});
