/**
 * A fake serial node (serial-node.ts) on the node's end of a serial line, e.g. one side of a socat
 * pseudo-terminal pair. A pty carries no DTR: whoever opens the gateway's end tells the node with
 * `node.portOpened()` / `node.portClosed()` (the gateway's tests wrap the serial binding to do it);
 * without that the node behaves like a board wired to a UART without reset on open.
 */
import { SerialPort } from "serialport";
import { SerialNode, type SerialNodeOptions } from "./serial-node.js";

export class SerialNodePort {
  readonly node: SerialNode;
  private port: SerialPort | null = null;

  constructor(
    private readonly path: string,
    options: Omit<SerialNodeOptions, "write">,
  ) {
    this.node = new SerialNode({ ...options, write: (text) => this.port?.write(Buffer.from(text, "latin1")) });
  }

  /** Opens the node's end and powers the node up. */
  async start(): Promise<void> {
    const port = new SerialPort({ path: this.path, baudRate: 9600, autoOpen: false });
    await new Promise<void>((resolve, reject) => port.open((e) => (e ? reject(e) : resolve())));
    port.on("error", () => undefined);
    port.on("data", (chunk: Buffer) => this.node.input(chunk));
    this.port = port;
    this.node.start();
  }

  async stop(): Promise<void> {
    this.node.stop();
    const p = this.port;
    this.port = null;
    if (p?.isOpen) await new Promise<void>((r) => p.close(() => r()));
  }

  /** Raw bytes from the node (line noise, a hand-made frame). */
  raw(text: string): void {
    this.port?.write(Buffer.from(text, "latin1"));
  }
}
