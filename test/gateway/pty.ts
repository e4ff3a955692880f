/** Pseudo-terminal pairs made with socat, and a fake Ninja firmware on one end. */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { SerialPort } from "serialport";
import { LineSplitter, decodeFrame, encodeNodeFrame, type NodeDevice } from "../../protocol/serial-frames.js";
import { waitFor } from "./helpers.js";

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

/** A node that speaks the Ninja frames: answers the version query, ACKs commands, sends readings. */
export class FakeFirmware {
  readonly commands: NodeDevice[] = [];
  private port: SerialPort | null = null;

  constructor(
    private readonly path: string,
    private readonly version = "V12_1.00",
  ) {}

  async open(): Promise<void> {
    const port = new SerialPort({ path: this.path, baudRate: 9600, autoOpen: false });
    await new Promise<void>((resolve, reject) => port.open((e) => (e ? reject(e) : resolve())));
    port.on("error", () => undefined);
    const split = new LineSplitter();
    port.setEncoding("utf8");
    port.on("data", (chunk: string) =>
      split.push(chunk, (l) => this.onLine(l), () => undefined),
    );
    this.port = port;
  }

  send(frame: Parameters<typeof encodeNodeFrame>[0]): void {
    this.port?.write(encodeNodeFrame(frame));
  }

  raw(text: string): void {
    this.port?.write(text);
  }

  async close(): Promise<void> {
    const p = this.port;
    this.port = null;
    if (p?.isOpen) await new Promise<void>((r) => p.close(() => r()));
  }

  private onLine(line: string): void {
    const r = decodeFrame(line);
    if (!r.ok || r.frame.kind !== "DEVICE") return this.send({ kind: "ERROR", codes: [1] });
    for (const d of r.frame.devices) {
      if (d.D === 1003 && d.DA === "VNO") {
        this.send({ kind: "DEVICE", devices: [{ G: "0", V: 0, D: 1003, DA: this.version }] });
        continue;
      }
      if (d.D === 4242) {
        this.send({ kind: "ERROR", codes: [3] });
        continue;
      }
      this.commands.push(d);
      this.send({ kind: "ACK", devices: [d] });
    }
  }
}
