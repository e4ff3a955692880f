/**
 * The block token on disk: one file (default `<state-dir>/token`), mode 0600, replaced atomically
 * (write a temporary file, fsync, rename), so a crash never leaves half a token behind.
 */
import { chmod, mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import type { TokenStore } from "./types.js";

export class FileTokenStore implements TokenStore {
  constructor(readonly file: string) {
    if (typeof file !== "string" || file.length === 0) throw new TypeError(`FileTokenStore: file must be a path, got "${String(file)}"`);
  }

  async load(): Promise<string | null> {
    let text: string;
    try {
      text = await readFile(this.file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
    // A token someone loosened the mode of is still used, but its mode is put back when we may.
    await chmod(this.file, 0o600).catch(() => undefined);
    const token = text.trim();
    return token.length > 0 ? token : null;
  }

  async save(token: string): Promise<void> {
    await mkdir(dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.tmp`;
    const fh = await open(tmp, "w", 0o600);
    try {
      await fh.writeFile(`${token}\n`, "utf8");
      await fh.sync();
    } finally {
      await fh.close();
    }
    await chmod(tmp, 0o600);
    await rename(tmp, this.file);
  }

  async clear(): Promise<void> {
    await rm(this.file, { force: true });
  }
}
