/** Pseudo-terminal pairs made with socat, and the DTR reset of the board at the node end (simulator/nodes/serial-node.ts). */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { type SerialBinding, nativeBinding } from "../../gateway/links/serial-port.js";
import type { SerialNode } from "../../simulator/nodes/serial-node.js";
import { waitFor } from "../helpers/wait.js";

/** `socat` joining two pty links; start() again after stop() recreates the same link paths. */
export class PtyPair {
  private proc: ChildProcess | null = null;
  constructor(
    readonly gatewayEnd: string,
    readonly firmwareEnd: string,
  ) {}

  async start(): Promise<void> {
    this.proc = spawn("socat", [`pty,raw,echo=0,link=${this.gatewayEnd}`, `pty,raw,echo=0,link=${this.firmwareEnd}`], {
      stdio: "ignore",
    });
    await waitFor("socat pty links", () => existsSync(this.gatewayEnd) && existsSync(this.firmwareEnd), 5000);
  }

  async stop(): Promise<void> {
    const p = this.proc;
    this.proc = null;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill("SIGTERM");
    await exited;
  }
}

/**
 * The native binding, plus what DTR does on a real USB serial adapter: opening the gateway's end
 * resets the board (`portOpened`), closing it leaves the node talking to nobody (`portClosed`).
 */
export function dtrBinding(node: () => SerialNode | null): SerialBinding {
  return {
    ...nativeBinding,
    create(path, baudRate) {
      const port = nativeBinding.create(path, baudRate);
      port.on("open", () => node()?.portOpened());
      port.on("close", () => node()?.portClosed());
      return port;
    },
  };
}
