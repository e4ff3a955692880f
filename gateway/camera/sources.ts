/**
 * Snapshot sources for the camera device (D 1004): an HTTP snapshot URL (e.g. mjpg-streamer's
 * `?action=snapshot`), a command that writes one JPEG to stdout (e.g. `libcamera-still -o -`), or a
 * file (kept fresh by something else). Each takes at most `timeoutMs` and 10 MiB, and refuses an
 * empty image.
 */
import { spawn } from "node:child_process";
import { readFile, stat } from "node:fs/promises";
import { NodeHttpTransport } from "../../protocol/transport.js";
import type { SnapshotSource } from "../agent/router.js";

/** The server accepts snapshots up to 10 MiB. */
export const MAX_SNAPSHOT_BYTES = 10 * 2 ** 20;

function checked(buf: Buffer, from: string): Buffer {
  if (buf.length === 0) throw new Error(`${from}: empty image`);
  if (buf.length > MAX_SNAPSHOT_BYTES) throw new Error(`${from}: image of ${buf.length} bytes is over 10 MiB`);
  return buf;
}

export class HttpSnapshot implements SnapshotSource {
  /** node:http, one connection per snapshot: snapshots are rare, and the gateway does not load undici. */
  private readonly transport = new NodeHttpTransport({ keepAlive: false });

  constructor(
    private readonly url: string,
    private readonly timeoutMs = 10_000,
  ) {
    if (!/^https?:\/\//.test(url)) throw new TypeError(`HttpSnapshot: url must be http(s), got "${url}"`);
  }

  async take(signal?: AbortSignal): Promise<Uint8Array> {
    let res;
    try {
      res = await this.transport.send({ method: "GET", url: this.url, headers: {}, signal, timeoutMs: this.timeoutMs, maxBytes: MAX_SNAPSHOT_BYTES });
    } catch (err) {
      throw new Error(`snapshot URL: ${(err as Error).message}`, { cause: err });
    }
    if (res.status !== 200) throw new Error(`snapshot URL answered ${res.status}`);
    return checked(res.body, "snapshot URL");
  }
}

export class CommandSnapshot implements SnapshotSource {
  constructor(
    private readonly command: string,
    private readonly timeoutMs = 10_000,
  ) {
    if (typeof command !== "string" || command.trim() === "") throw new TypeError("CommandSnapshot: command must be a non-empty string");
  }

  take(signal?: AbortSignal): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      // Through the shell, so the configured command may carry arguments and pipes; in its own
      // process group, so a timeout kills the whole pipeline and not only the shell.
      const child = spawn("/bin/sh", ["-c", this.command], { stdio: ["ignore", "pipe", "pipe"], detached: true });
      const killAll = (): void => {
        try {
          if (child.pid) process.kill(-child.pid, "SIGKILL");
        } catch {
          // already gone
        }
      };
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        killAll();
      }, this.timeoutMs);
      signal?.addEventListener("abort", killAll, { once: true });
      const chunks: Buffer[] = [];
      let size = 0;
      let stderr = "";
      child.stdout.on("data", (c: Buffer) => {
        size += c.length;
        if (size > MAX_SNAPSHOT_BYTES) killAll();
        else chunks.push(c);
      });
      child.stderr.on("data", (c: Buffer) => {
        stderr = (stderr + c.toString("utf8")).slice(-500);
      });
      child.on("error", (err) => {
        clearTimeout(timer);
        reject(new Error(`snapshot command: ${err.message}`));
      });
      child.on("close", (code, sig) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", killAll);
        if (timedOut) return reject(new Error(`snapshot command took longer than ${this.timeoutMs} ms`));
        if (size > MAX_SNAPSHOT_BYTES) return reject(new Error("snapshot command wrote over 10 MiB"));
        if (code !== 0) return reject(new Error(`snapshot command exited with ${code ?? sig}: ${stderr.trim()}`));
        try {
          resolve(checked(Buffer.concat(chunks), "snapshot command"));
        } catch (err) {
          reject(err as Error);
        }
      });
    });
  }
}

export class FileSnapshot implements SnapshotSource {
  constructor(private readonly file: string) {
    if (typeof file !== "string" || file === "") throw new TypeError("FileSnapshot: file must be a path");
  }

  async take(): Promise<Uint8Array> {
    const st = await stat(this.file);
    if (st.size > MAX_SNAPSHOT_BYTES) throw new Error(`snapshot file is ${st.size} bytes, over 10 MiB`);
    return checked(await readFile(this.file), "snapshot file");
  }
}

/** The source a camera config names. */
export function snapshotSource(c: { url?: string; command?: string; file?: string; timeoutMs?: number }): SnapshotSource {
  if (c.url) return new HttpSnapshot(c.url, c.timeoutMs);
  if (c.command) return new CommandSnapshot(c.command, c.timeoutMs);
  if (c.file) return new FileSnapshot(c.file);
  throw new TypeError("camera: give one of url, command and file");
}
