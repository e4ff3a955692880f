/**
 * The serial link: a Ninja-firmware node on a UART or USB serial port (DESIGN.md "Serial link").
 * Opens the port (path or USB match), waits for the board to come out of the reset the open
 * causes, asks the firmware version (answered in an ACK by the original firmwares), turns DEVICE
 * frames into readings and PLUGIN/UNPLUG into config events (serial-readings.ts), writes commands
 * one at a time (ACK or 2 s), refuses a command line the firmware cannot read (128-byte input
 * buffer, 64-byte DA buffer), logs ERROR frames with their meaning and counts garbage lines. When
 * the port goes away the link is marked down and reopened as soon as its path (or USB match) is
 * back; the daemon keeps running.
 */
import type { SerialPortStream } from "@serialport/stream";
import pino, { type Logger } from "pino";
import type { Command } from "../../protocol/payloads.js";
import {
  LineSplitter,
  type NodeDevice,
  type SerialFrame,
  VERSION_QUERY,
  commandProblem,
  decodeFrame,
  encodeCommand,
  serialErrorMeaning,
} from "../../protocol/serial-frames.js";
import { Backoff, sleep } from "../agent/backoff.js";
import type { CommandTarget, Reading } from "../agent/types.js";
import { CommandQueue } from "./command-queue.js";
import { SerialCommandRefused, type SerialCounters, type SerialLinkOptions } from "./serial-options.js";
import { frameReadings, versionIn } from "./serial-readings.js";
import {
  type SerialBinding,
  closePort,
  nativeBinding,
  openPort,
  resolvePort,
  waitForPort,
  writePort,
} from "./serial-port.js";
import type { Link, LinkState } from "./types.js";

// What the link is given and counts are in serial-options.ts; importers take them from here.
export { SerialCommandRefused, type SerialCounters, type SerialLinkOptions } from "./serial-options.js";

export class SerialLink implements Link, CommandTarget {
  readonly name: string;
  state: LinkState = "down";
  firmwareVersion: string | null = null;
  /** The firmware answered the version query since the port last opened. */
  private versionAnswered = false;
  private port: SerialPortStream | null = null;
  private stopped = true;
  private loop: Promise<void> | null = null;
  private abort = new AbortController();
  private readonly queue: CommandQueue;
  private readonly backoff: Backoff;
  private readonly binding: SerialBinding;
  private readonly log: Logger;
  private readonly seen = new Set<string>();
  private readonly stats = { framesIn: 0, readings: 0, garbage: 0, firmwareErrors: 0, opens: 0, disconnects: 0, commandsRefused: 0 };
  private settle: NodeJS.Timeout | undefined;

  constructor(private readonly o: SerialLinkOptions) {
    if (!o.path && !o.match) throw new TypeError("SerialLink: give a port path or a USB match");
    if (o.baudRate !== undefined && !(Number.isInteger(o.baudRate) && o.baudRate > 0)) {
      throw new TypeError(`SerialLink: baudRate must be a positive whole number, got ${String(o.baudRate)}`);
    }
    this.name = o.name ?? "serial";
    this.binding = o.binding ?? nativeBinding;
    this.log = o.logger ?? pino({ level: "silent" });
    this.backoff = new Backoff({ baseMs: 500, maxMs: 30_000, ...o.reopen });
    this.queue = new CommandQueue((cmd) => this.writeLine(encodeCommand(cmd)), { ackTimeoutMs: o.ackTimeoutMs });
  }

  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    this.abort = new AbortController();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    if (this.settle) clearTimeout(this.settle);
    this.queue.clear("serial link stopped");
    if (this.port) await closePort(this.port);
    await this.loop;
    this.loop = null;
    this.setState("down");
  }

  owns(cmd: Command): boolean {
    return this.seen.has(`${cmd.G}_${cmd.V}_${cmd.D}`);
  }

  deliver(cmd: Command): Promise<void> {
    const why = commandProblem(cmd, { maxLineBytes: this.o.maxLineBytes, maxDaChars: this.o.maxDaChars });
    if (why !== null) {
      this.stats.commandsRefused++;
      this.log.warn({ G: cmd.G, V: cmd.V, D: cmd.D, daChars: cmd.DA.length }, `serial command refused: ${why}`);
      return Promise.reject(new SerialCommandRefused(`serial command refused: ${why}`));
    }
    return this.queue.send(cmd);
  }

  counters(): SerialCounters {
    const q = this.queue.stats;
    return { ...this.stats, commandsSent: q.sent, commandsAcked: q.acked, ackTimeouts: q.timeouts };
  }

  private async run(): Promise<void> {
    let warned = false;
    while (!this.stopped) {
      // A port that is not there is watched for, the link down meanwhile (a replugged USB node is
      // back within a watch period); only a port that is there and fails to open waits out a backoff.
      if (!(await waitForPort(this.binding, this.o, this.o.watchMs ?? 250, this.abort.signal))) break;
      this.setState("opening");
      let port: SerialPortStream;
      let path: string;
      let identity: string | null;
      try {
        path = await resolvePort(this.binding, this.o);
        identity = await this.binding.identify(path);
        port = this.binding.create(path, this.o.baudRate ?? 9600);
        await openPort(port);
      } catch (err) {
        if (this.stopped) break;
        this.setState("down");
        const delay = this.backoff.fail();
        // The first failure is worth a warning; repeating it every few seconds for hours is not.
        this.log[warned ? "debug" : "warn"]({ err: (err as Error).message, retryMs: delay }, "serial port not available");
        warned = true;
        await sleep(delay, this.abort.signal);
        continue;
      }
      warned = false;
      this.stats.opens++;
      this.backoff.succeed();
      const opened = Date.now();
      await this.serve(port, path, identity);
      if (this.stopped) break;
      this.stats.disconnects++;
      // A port that keeps closing right after it opened is not reopened in a tight loop.
      const delay = Date.now() - opened < 1_000 ? this.backoff.fail() : 0;
      this.log.warn({ retryMs: delay }, "serial port went away: reopening when it is back");
      await sleep(delay, this.abort.signal);
    }
  }

  /** Runs one open port until it closes. */
  private serve(port: SerialPortStream, path: string, identity: string | null): Promise<void> {
    this.port = port;
    const splitter = new LineSplitter();
    return new Promise<void>((resolve) => {
      const watch = setInterval(() => {
        this.binding.identify(path).then(
          (now) => {
            if (now === identity || !port.isOpen) return;
            this.log.warn({ path }, "serial device node gone or replaced: closing the port");
            port.destroy();
          },
          () => undefined,
        );
      }, this.o.checkEveryMs ?? 500);
      port.setEncoding("utf8");
      port.on("data", (chunk: string) => splitter.push(chunk, (l) => this.onLine(l), (r) => this.onGarbage(r, "")));
      port.on("error", (err: Error) => this.log.warn({ err: err.message }, "serial port error"));
      port.once("close", () => {
        clearInterval(watch);
        if (this.settle) clearTimeout(this.settle);
        this.settle = undefined;
        this.port = null;
        this.queue.setReady(false);
        this.setState("down");
        resolve();
      });
      this.setState("up");
      this.log.info({ path: port.path, baudRate: this.o.baudRate ?? 9600 }, "serial port open");
      this.versionAnswered = false;
      // The open reset the board: nothing is written until it can hear, then the version first.
      this.settle = setTimeout(() => {
        this.settle = undefined;
        if (this.port !== port) return;
        this.askVersion(port, 1);
        this.queue.setReady(true);
      }, this.o.settleMs ?? 2_000);
    });
  }

  /**
   * Asks the firmware version, ahead of any queued command. A firmware that is not reading yet
   * misses the query: asked again after each unacknowledged try (the 2 s ACK timeout), up to 5
   * times while this port stays open.
   */
  private askVersion(port: object, attempt: number): void {
    this.queue.send(VERSION_QUERY as Required<NodeDevice>, true).catch((err: unknown) => {
      this.log.debug({ err: (err as Error).message, attempt }, "firmware version query not acknowledged");
      if (this.port === port && !this.versionAnswered && attempt < 5) this.askVersion(port, attempt + 1);
    });
  }

  private onLine(line: string): void {
    if (line.trim().length === 0) return;
    this.o.recorder?.record(this.name, line);
    const r = decodeFrame(line);
    if (!r.ok) return this.onGarbage(r.reason, line);
    this.stats.framesIn++;
    this.handle(r.frame);
  }

  private handle(frame: SerialFrame): void {
    if (frame.kind === "ERROR") return this.onError(frame.codes);
    if (frame.kind === "ACK") {
      for (const d of frame.devices) if (!this.queue.ack(d)) this.log.debug({ G: d.G, D: d.D }, "ACK for no command in flight");
    }
    const readings: Reading[] = [];
    for (const r of frameReadings(frame)) {
      if (r.DA === "VERSION" && r.kind === "config") {
        if (!this.onVersion(r.value ?? "")) continue;
      } else if (r.kind === "data") this.stats.readings++;
      readings.push(r);
    }
    // A DEVICE frame answering the version query ends that query like its ACK would.
    if (frame.kind === "DEVICE") for (const d of frame.devices) if (versionIn(d) !== null) this.queue.ack(d);
    this.submit(readings);
  }

  /** Records an answered version; true when it is new (and so worth reporting). */
  private onVersion(version: string): boolean {
    this.versionAnswered = true;
    if (version === this.firmwareVersion) return false;
    this.firmwareVersion = version;
    this.log.info({ version }, "firmware version");
    return true;
  }

  private onError(codes: number[]): void {
    for (const code of codes) {
      this.stats.firmwareErrors++;
      this.log.warn({ code, meaning: serialErrorMeaning(code) }, `firmware ERROR ${code}: ${serialErrorMeaning(code)}`);
    }
    // ERROR 1 comes once per 128-byte chunk of a line the firmware could not read: more may
    // follow, and none of them may be taken for the answer to the next command.
    if (codes.includes(1)) this.queue.quiet(this.o.quietMs ?? 500);
    // An ERROR ends the command in flight, if it was completely written before the ERROR came.
    const first = codes[0];
    if (first !== undefined && !this.queue.fail(`firmware ERROR ${first}: ${serialErrorMeaning(first)}`)) {
      this.log.debug({ code: first }, "ERROR for no command written: not blamed on any");
    }
  }

  private onGarbage(reason: string, line: string): void {
    this.stats.garbage++;
    this.log.debug({ reason, line: line.slice(0, 120) }, "garbage line skipped");
  }

  private submit(readings: Reading[]): void {
    if (readings.length === 0) return;
    for (const r of readings) this.seen.add(`${r.G}_${r.V}_${r.D}`);
    this.o.sink.submitMany(readings, this.name);
  }

  private async writeLine(line: string): Promise<void> {
    if (!this.port) throw new Error("serial port is not open");
    await writePort(this.port, line);
  }

  private setState(s: LinkState): void {
    this.state = s;
  }
}
