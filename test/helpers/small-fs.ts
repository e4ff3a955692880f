/**
 * A real small filesystem for full-disk tests: a tmpfs of a given size mounted on a fresh temp dir
 * (the tests run as root, as CI does). There is no fallback: a test that needs a full disk and
 * cannot mount one fails, loudly, instead of passing without having tested anything.
 */
import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export class SmallFs {
  private fillers = 0;

  private constructor(readonly dir: string) {}

  /** Mounts a tmpfs of `bytes` (rounded up to pages). */
  static mount(bytes: number): SmallFs {
    const dir = mkdtempSync(join(tmpdir(), "bk-smallfs-"));
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", `size=${bytes},mode=0700`, "tmpfs", dir], { stdio: "pipe" });
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      const why = (err as { stderr?: Buffer }).stderr?.toString().trim() || (err as Error).message;
      throw new Error(`cannot mount a ${bytes}-byte tmpfs for a full-disk test (run the tests as root, as .ci/run does): ${why}`);
    }
    return new SmallFs(dir);
  }

  /** Free bytes, as an unprivileged writer sees them. */
  free(): number {
    const s = statfsSync(this.dir);
    return s.bavail * s.bsize;
  }

  /** Writes a filler file so that about `leave` bytes stay free (0: the disk is full). */
  fill(leave = 0): void {
    const fd = openSync(join(this.dir, `filler-${this.fillers++}`), "w");
    const chunk = Buffer.alloc(64 * 1024, 0x55);
    try {
      for (;;) {
        const room = this.free() - leave;
        if (room <= 0) break;
        writeSync(fd, chunk, 0, Math.min(chunk.length, room));
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
    } finally {
      closeSync(fd);
    }
  }

  /** Removes the filler files: the space returns. */
  unfill(): void {
    for (let i = 0; i < this.fillers; i++) rmSync(join(this.dir, `filler-${i}`), { force: true });
    this.fillers = 0;
  }

  unmount(): void {
    execFileSync("umount", ["-l", this.dir], { stdio: "pipe" });
    rmSync(this.dir, { recursive: true, force: true });
  }
}
