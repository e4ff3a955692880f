/**
 * The firmware on a simulated ATmega328P (runner/avr-runner.c over simavr), driven like a board on
 * a bench: set A0's voltage, press the button on D2, read D7, D13 and the PWM pins, reset the MCU.
 * Its UART is a pseudo-terminal at `pty`; HostPort opens that end like a gateway would.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { createInterface } from "node:readline";
import { SerialPort } from "serialport";
import { LineSplitter } from "../../protocol/serial-frames.js";
import { waitFor } from "../helpers/wait.js";
import { FIRMWARE_ELF, RUNNER, buildFirmwareAndRunner } from "./build.js";

const execFileP = promisify(execFile);

export interface BoardState {
  ms: number;
  d7: number;
  d13: number;
  d9: number;
  d10: number;
  d11: number;
  wdt: string;
  boots: number;
  /** Bytes the MCU's UART received and sent so far; bytes written to the port not yet received. */
  rx: number;
  tx: number;
  queued: number;
}

export interface BoardOptions {
  pty: string;
  /** A0 at start, millivolts. */
  a0?: number;
  /** Opening the port resets the MCU (an Arduino's DTR), held in reset this long (the bootloader). */
  resetOnOpen?: { bootMs: number };
}

export class SimBoard {
  /** Every event line of the runner so far ("boot 1", "open", "close", …). */
  readonly events: string[] = [];
  private readonly answers: string[] = [];
  private readonly waiting: ((line: string) => void)[] = [];
  private stderr = "";
  private exited = false;

  private constructor(
    private readonly proc: ChildProcess,
    /** The board's serial port (a pseudo-terminal). */
    readonly pty: string,
  ) {
    createInterface({ input: proc.stdout! }).on("line", (line) => {
      if (line.startsWith("event ")) this.events.push(line.slice(6));
      else {
        const w = this.waiting.shift();
        if (w) w(line);
        else this.answers.push(line);
      }
    });
    proc.stderr?.on("data", (c: Buffer) => (this.stderr = (this.stderr + c.toString()).slice(-4000)));
    proc.once("exit", () => (this.exited = true));
  }

  static async start(o: BoardOptions): Promise<SimBoard> {
    await buildFirmwareAndRunner();
    const args = ["--elf", FIRMWARE_ELF, "--pty", o.pty, "--a0", String(o.a0 ?? 0)];
    if (o.resetOnOpen) args.push("--reset-on-open", "--boot-ms", String(o.resetOnOpen.bootMs));
    const board = new SimBoard(spawn(RUNNER, args, { stdio: ["pipe", "pipe", "pipe"] }), o.pty);
    await waitFor("the simulated board's pseudo-terminal", () => board.events.some((e) => e.startsWith("ready")) || board.failed(), 10_000);
    if (board.exited) throw new Error(`avr-runner exited: ${board.stderr}`);
    return board;
  }

  private failed(): boolean {
    return this.exited;
  }

  /** Sends one control command; resolves with its answer line. */
  command(line: string): Promise<string> {
    if (this.exited) return Promise.reject(new Error(`avr-runner has exited: ${this.stderr}`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`avr-runner did not answer "${line}"`)), 15_000);
      this.waiting.push((answer) => {
        clearTimeout(timer);
        if (answer.startsWith("error")) reject(new Error(`avr-runner: ${answer}`));
        else resolve(answer);
      });
      this.proc.stdin?.write(`${line}\n`);
    });
  }

  async state(): Promise<BoardState> {
    const line = await this.command("state");
    const fields = Object.fromEntries(line.slice("state ".length).split(" ").map((kv) => kv.split("=") as [string, string]));
    const n = (k: string): number => Number(fields[k]);
    return { ms: n("ms"), d7: n("d7"), d13: n("d13"), d9: n("d9"), d10: n("d10"), d11: n("d11"), wdt: fields.wdt ?? "", boots: n("boots"), rx: n("rx"), tx: n("tx"), queued: n("queued") };
  }

  async setA0(millivolts: number): Promise<void> {
    await this.command(`a0 ${millivolts}`);
  }

  /**
   * Drives D2 through levels with simulated milliseconds between them, e.g. [0, 3, 1, 4, 0]: low,
   * 3 ms later high (a bounce), 4 ms later low for good. 0 is the button pressed.
   */
  async driveButton(levelsAndGaps: number[]): Promise<void> {
    await this.command(`d2 ${levelsAndGaps.join(",")}`);
  }

  async reset(): Promise<void> {
    await this.command("reset");
  }

  /**
   * Hangs the firmware: jumps to avr-libc's _exit (`cli` then a jump to itself), where nothing but
   * the watchdog can get the MCU out.
   */
  async hang(): Promise<void> {
    const { stdout } = await execFileP("avr-nm", [FIRMWARE_ELF]);
    const m = /^([0-9a-f]+) T _exit$/m.exec(stdout);
    if (!m) throw new Error("no _exit symbol in the firmware");
    await this.command(`hang 0x${m[1]}`);
  }

  /** Runs `ms` of simulated time as fast as the simulator goes (readings due every 30 s, …). */
  async advance(ms: number): Promise<void> {
    await this.command(`advance ${ms}`);
  }

  boots(): number {
    return this.events.filter((e) => e.startsWith("boot")).length;
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((r) => this.proc.once("exit", r));
    this.proc.stdin?.end("quit\n");
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), 5_000);
    await gone;
    clearTimeout(timer);
  }
}

/** The other end of the board's serial line, as the gateway sees it: raw lines in, bytes out. */
export class HostPort {
  /** Every line received so far, without its \r\n. */
  readonly lines: string[] = [];
  private port: SerialPort | null = null;

  async open(path: string): Promise<void> {
    const port = new SerialPort({ path, baudRate: 9600, autoOpen: false });
    await new Promise<void>((resolve, reject) => port.open((e) => (e ? reject(e) : resolve())));
    port.on("error", () => undefined);
    const split = new LineSplitter();
    port.setEncoding("latin1");
    port.on("data", (chunk: string) => split.push(chunk, (l) => this.lines.push(l), () => this.lines.push("<garbage>")));
    this.port = port;
  }

  write(data: string | Buffer): Promise<void> {
    const p = this.port;
    if (!p) return Promise.reject(new Error("port not open"));
    return new Promise((resolve, reject) => {
      p.write(data, (e) => (e ? reject(e) : p.drain((e2) => (e2 ? reject(e2) : resolve()))));
    });
  }

  /** The index of the next line to arrive: pass it to `after` to look only at what comes next. */
  mark(): number {
    return this.lines.length;
  }

  after(mark: number): string[] {
    return this.lines.slice(mark).filter((l) => l.length > 0);
  }

  /** Waits until the lines since `mark` satisfy `done`; returns them. */
  async until(mark: number, what: string, done: (lines: string[]) => boolean, ms = 10_000): Promise<string[]> {
    return waitFor(what, () => (done(this.after(mark)) ? this.after(mark) : null), ms);
  }

  async close(): Promise<void> {
    const p = this.port;
    this.port = null;
    if (p?.isOpen) await new Promise<void>((r) => p.close(() => r()));
  }
}

/** A frame line for device D of port "0" with DA, as the firmware writes it. */
export function frame(kind: "DEVICE" | "PLUGIN" | "ACK", D: number, DA?: string): string {
  return JSON.stringify({ [kind]: [DA === undefined ? { G: "0", V: 0, D } : { G: "0", V: 0, D, DA }] });
}

export function command(...devices: { D: number; DA: string; G?: string; V?: number }[]): string {
  return `${JSON.stringify({ DEVICE: devices.map((d) => ({ G: d.G ?? "0", V: d.V ?? 0, D: d.D, DA: d.DA })) })}\r\n`;
}
