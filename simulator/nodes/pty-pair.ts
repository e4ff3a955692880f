/**
 * A pseudo-terminal pair for `blockkit sim nodes --serial` without a path: the node talks on one
 * end, the gateway opens the other (`blockkit gateway --serial <path>`), as if a board were wired to
 * a USB serial adapter. Node.js has no openpty(), so the pair is socat's (`socat pty pty`, the tool
 * the gateway's own serial tests use); socat relays bytes between the two ends, raw and without
 * echo, until stop(). The relay starts only once the gateway opens its end (socat's `wait-slave`),
 * which `opened` reports: the node powers up then, as a USB board resets when its port is opened
 * (bytes sent before would be lost, and with them the node's PLUGIN announcements).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { type FSWatcher, readlinkSync, watch } from "node:fs";
import { dirname } from "node:path";
import { createInterface } from "node:readline";

export interface PtyEnds {
  /** The end the simulated node opens. */
  node: string;
  /** The end to give the gateway (the `link` path when one was asked for). */
  gateway: string;
}

export interface PtyPairOptions {
  /** A stable path (a symbolic link socat makes and removes) for the gateway's end, e.g. /tmp/blockkit-node. */
  link?: string;
  /** The socat executable. Default "socat" (from PATH). */
  socat?: string;
  /** Longest wait for socat to report both ends, ms. Default 5,000. */
  timeoutMs?: number;
}

export class PtyPair {
  private proc: ChildProcess | null = null;
  private openedResolve!: () => void;
  /** Resolves once the gateway opened its end (socat starts relaying). */
  readonly opened = new Promise<void>((resolve) => {
    this.openedResolve = resolve;
  });

  constructor(private readonly o: PtyPairOptions = {}) {
    if (o.link !== undefined && (o.link === "" || /[,!:]/.test(o.link))) {
      // socat reads its address as options separated by these characters.
      throw new TypeError(`PtyPair: link must be a path without ",", "!" or ":", got "${o.link}"`);
    }
  }

  /** Starts socat; resolves with both ends once it relays between them. */
  start(): Promise<PtyEnds> {
    const gatewaySide = `pty,raw,echo=0,wait-slave${this.o.link ? `,link=${this.o.link}` : ""}`;
    // -d -d: socat names each pty it opens ("N PTY is /dev/pts/7"), then says it is relaying.
    const proc = spawn(this.o.socat ?? "socat", ["-d", "-d", "pty,raw,echo=0", gatewaySide], { stdio: ["ignore", "ignore", "pipe"] });
    this.proc = proc;
    return new Promise<PtyEnds>((resolve, reject) => {
      const ptys: string[] = [];
      const said: string[] = [];
      let settled = false;
      let watcher: FSWatcher | null = null;
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        watcher?.close();
        proc.removeAllListeners("exit");
        return true;
      };
      const fail = (why: string): void => {
        if (!settle()) return;
        if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
        reject(new Error(why));
      };
      const ready = (ends: PtyEnds): void => {
        if (settle()) resolve(ends);
      };
      const timer = setTimeout(() => fail(`socat did not create a pseudo-terminal pair within ${this.o.timeoutMs ?? 5000} ms: ${said.join(" | ")}`), this.o.timeoutMs ?? 5000);
      proc.once("error", (err: NodeJS.ErrnoException) =>
        fail(
          err.code === "ENOENT"
            ? "creating a pseudo-terminal pair needs socat (Debian: apt install socat); or give --serial PATH, one end of a pair made otherwise"
            : `socat: ${err.message}`,
        ),
      );
      proc.once("exit", (code, signal) => fail(`socat ended (${signal ?? `exit code ${code}`}) before the pair was ready: ${said.join(" | ")}`));
      createInterface({ input: proc.stderr as NodeJS.ReadableStream }).on("line", (line) => {
        if (said.length < 20) said.push(line);
        const pty = / PTY is (\S+)/.exec(line);
        if (pty) ptys.push(pty[1] as string);
        if (pty && ptys.length === 2) {
          const ends = { node: ptys[0] as string, gateway: this.o.link ?? (ptys[1] as string) };
          const link = this.o.link;
          if (link === undefined) {
            ready(ends);
            return;
          }
          // socat names both ptys before it makes the link (xio-pty.c): a gateway handed the link at
          // once could find no such file. Ready once the link points at the gateway's pty.
          const made = (): boolean => {
            try {
              return readlinkSync(link) === ptys[1];
            } catch {
              return false;
            }
          };
          watcher = watch(dirname(link), () => {
            if (made()) ready(ends);
          }).on("error", (err) => fail(`watching ${dirname(link)} for socat's link: ${err.message}`));
          if (made()) ready(ends);
        }
        if (/starting data transfer loop/.test(line)) this.openedResolve();
      });
    });
  }

  /** Ends socat (both ends close; the link is removed) and waits for it. */
  async stop(): Promise<void> {
    const p = this.proc;
    this.proc = null;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill("SIGTERM");
    await exited;
  }
}
