/** Snapshot sources: an HTTP snapshot URL (a real local server), a command, a file; their limits. */
import { rmSync, writeFileSync } from "node:fs";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CommandSnapshot, FileSnapshot, HttpSnapshot, snapshotSource } from "../../gateway/camera/sources.js";
import { tempDir } from "./helpers.js";

const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0xff, 0xd9]);
const dir = tempDir("camera");
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/?action=snapshot") res.writeHead(200, { "content-type": "image/jpeg" }).end(JPEG);
    else if (req.url === "/empty") res.writeHead(200).end();
    else res.writeHead(503).end("busy");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

describe("snapshot sources", () => {
  it("takes a JPEG from an HTTP snapshot URL and refuses errors and empty images", async () => {
    expect(Buffer.from(await new HttpSnapshot(`${base}/?action=snapshot`).take()).equals(JPEG)).toBe(true);
    await expect(new HttpSnapshot(`${base}/down`).take()).rejects.toThrow(/answered 503/);
    await expect(new HttpSnapshot(`${base}/empty`).take()).rejects.toThrow(/empty image/);
  });

  it("runs a command and takes its stdout, naming the failure when it fails", async () => {
    const file = join(dir, "a.jpg");
    writeFileSync(file, JPEG);
    expect(Buffer.from(await new CommandSnapshot(`cat ${file}`).take()).equals(JPEG)).toBe(true);
    await expect(new CommandSnapshot("echo no camera >&2; exit 3").take()).rejects.toThrow(/exited with 3: no camera/);
    const t0 = Date.now();
    await expect(new CommandSnapshot("sleep 5 | cat", 200).take()).rejects.toThrow(/longer than 200 ms/);
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it("reads a file, and picks the source a config names", async () => {
    const file = join(dir, "b.jpg");
    writeFileSync(file, JPEG);
    expect(Buffer.from(await new FileSnapshot(file).take()).equals(JPEG)).toBe(true);
    await expect(new FileSnapshot(join(dir, "missing.jpg")).take()).rejects.toThrow(/ENOENT/);
    expect(snapshotSource({ url: `${base}/x` })).toBeInstanceOf(HttpSnapshot);
    expect(snapshotSource({ command: "true" })).toBeInstanceOf(CommandSnapshot);
    expect(() => snapshotSource({})).toThrow(TypeError);
  });
});
