/** `blockkit gateway` as a child process, the way systemd runs it. */
import { type ChildProcess, spawn } from "node:child_process";
import { request } from "undici";

export class GatewayProcess {
  private proc: ChildProcess | null = null;
  output = "";

  constructor(
    private readonly args: string[],
    readonly healthPort: number,
  ) {}

  /** Starts it and resolves once it printed its ready line. */
  async start(timeoutMs = 20_000): Promise<void> {
    const proc = spawn(process.execPath, ["--import", "tsx", "cli/index.ts", "gateway", ...this.args, "--health-port", String(this.healthPort)], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, BLOCKKIT_LOG_LEVEL: "warn" },
    });
    this.proc = proc;
    proc.stderr?.on("data", (c: Buffer) => (this.output = (this.output + c.toString()).slice(-20_000)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`gateway not ready in ${timeoutMs} ms:\n${this.output}`)), timeoutMs);
      proc.stdout?.on("data", (c: Buffer) => {
        if (c.toString().includes("blockkit gateway ready")) {
          clearTimeout(timer);
          resolve();
        }
      });
      proc.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`gateway exited with ${code}:\n${this.output}`));
      });
    });
  }

  async health(): Promise<{ agent: string; links: Record<string, string>; outbox: { rows: number; dropped: number } }> {
    const res = await request(`http://127.0.0.1:${this.healthPort}/healthz`);
    return (await res.body.json()) as { agent: string; links: Record<string, string>; outbox: { rows: number; dropped: number } };
  }

  /** Kills it with `signal` and waits for the exit. */
  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const p = this.proc;
    this.proc = null;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill(signal);
    await exited;
  }
}
