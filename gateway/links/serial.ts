/**
 * The serial link: a Ninja-firmware node on a UART or USB serial port (DESIGN.md "Serial link").
 * Opens the port (path or USB match), asks the firmware version, turns DEVICE frames into readings
 * and PLUGIN/UNPLUG into config events, writes commands one at a time (ACK or 2 s), logs ERROR
 * frames with their meaning and counts garbage lines. When the port goes away the link is marked
 * down and reopened with backoff; the daemon keeps running.
 */
import type { SerialPortStream } from "@serialport/stream";
import pino, { type Logger } from "pino";
import type { Command } from "../../protocol/payloads.js";
import {
  LineSplitter,
  type NodeDevice,
  type SerialFrame,
  VERSION_QUERY,
  decodeFrame,
  encodeCommand,
  serialErrorMeaning,
} from "../../protocol/serial-frames.js";
import { Backoff, type BackoffOptions, sleep } from "../agent/backoff.js";
import type { CommandTarget, Reading } from "../agent/types.js";
import { CommandQueue } from "./command-queue.js";
import { type SerialBinding, type UsbMatch, closePort, nativeBinding, openPort, resolvePort, writePort } from "./serial-port.js";
import type { FrameRecorder, Link, LinkState, ReadingSink } from "./types.js";

export interface SerialLinkOptions {
  /** Device path, e.g. `/dev/ttyAMA0` or `/dev/serial/by-id/usb-…`. Either this or `match`. */
  path?: string;
  /** USB match resolved through the port list at every open. */
  match?: UsbMatch;
  /** Default 9600. */
  baudRate?: number;
  sink: ReadingSink;
  /** Default: the native binding. Tests pass SerialPortMock's. */
  binding?: SerialBinding;
  recorder?: FrameRecorder;
  logger?: Logger;
  /** Wait for a command's ACK, ms. Default 2 000. */
  ackTimeoutMs?: number;
  /** Reopen backoff. Default 500 ms to 30 s, reset after 30 s open. */
  reopen?: BackoffOptions;
  /** How often an open port's device node is checked, ms. Default 1 000. */
  checkEveryMs?: number;
  /** Link name (commands are routed by it). Default `serial`. */
  name?: string;
}

export interface SerialCounters extends Record<string, number> {
  framesIn: number;
  readings: number;
  garbage: number;
  firmwareErrors: number;
  opens: number;
  disconnects: number;
  commandsSent: number;
  commandsAcked: number;
  ackTimeouts: number;
}

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
  private readonly stats = { framesIn: 0, readings: 0, garbage: 0, firmwareErrors: 0, opens: 0, disconnects: 0 };

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
    return this.queue.send(cmd);
  }

  counters(): SerialCounters {
    return { ...this.stats, commandsSent: this.queue.stats.sent, commandsAcked: this.queue.stats.acked, ackTimeouts: this.queue.stats.timeouts };
  }

  private async run(): Promise<void> {
    let warned = false;
    while (!this.stopped) {
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
      await this.serve(port, path, identity);
      if (this.stopped) break;
      this.stats.disconnects++;
      const delay = this.backoff.fail();
      this.log.warn({ retryMs: delay }, "serial port went away: reopening");
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
      }, this.o.checkEveryMs ?? 1_000);
      port.setEncoding("utf8");
      port.on("data", (chunk: string) => splitter.push(chunk, (l) => this.onLine(l), (r) => this.onGarbage(r, "")));
      port.on("error", (err: Error) => this.log.warn({ err: err.message }, "serial port error"));
      port.once("close", () => {
        clearInterval(watch);
        this.port = null;
        this.queue.setReady(false);
        this.setState("down");
        resolve();
      });
      this.setState("up");
      this.log.info({ path: port.path, baudRate: this.o.baudRate ?? 9600 }, "serial port open");
      this.queue.setReady(true);
      this.versionAnswered = false;
      this.askVersion(port, 1);
    });
  }

  /**
   * Asks the firmware version. A board that resets when its port opens (an Arduino does) or a
   * firmware that is not reading yet misses the query: asked again after each unacknowledged try
   * (the 2 s ACK timeout), up to 5 times while this port stays open.
   */
  private askVersion(port: object, attempt: number): void {
    this.queue.send(VERSION_QUERY as Required<NodeDevice>).catch((err: unknown) => {
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
    switch (frame.kind) {
      case "DEVICE":
        return this.onDevice(frame.devices);
      case "PLUGIN":
      case "UNPLUG":
        return this.submit(frame.devices.map((d) => this.config(d, frame.kind, d.DA)));
      case "ACK":
        for (const d of frame.devices) if (!this.queue.ack(d)) this.log.debug({ G: d.G, D: d.D }, "ACK for no command in flight");
        return;
      case "ERROR":
        return this.onError(frame.codes);
    }
  }

  private onDevice(devices: NodeDevice[]): void {
    const readings: Reading[] = [];
    for (const d of devices) {
      if (d.D === VERSION_QUERY.D && d.G === VERSION_QUERY.G) {
        this.versionAnswered = true;
        this.queue.ack(d);
        if (d.DA && d.DA !== "VNO" && d.DA !== this.firmwareVersion) {
          this.firmwareVersion = d.DA;
          this.log.info({ version: d.DA }, "firmware version");
          readings.push(this.config(d, "VERSION", d.DA));
        }
        continue;
      }
      readings.push({ G: d.G, V: d.V, D: d.D, DA: d.DA ?? "", kind: "data" });
    }
    this.stats.readings += readings.length;
    this.submit(readings);
  }

  private onError(codes: number[]): void {
    for (const code of codes) {
      this.stats.firmwareErrors++;
      this.log.warn({ code, meaning: serialErrorMeaning(code) }, `firmware ERROR ${code}: ${serialErrorMeaning(code)}`);
    }
    // The firmware answers a command with ACK or ERROR: an ERROR ends the command in flight.
    const first = codes[0];
    if (first !== undefined) this.queue.fail(`firmware ERROR ${first}: ${serialErrorMeaning(first)}`);
  }

  private onGarbage(reason: string, line: string): void {
    this.stats.garbage++;
    this.log.debug({ reason, line: line.slice(0, 120) }, "garbage line skipped");
  }

  private config(d: NodeDevice, type: string, value: string | undefined): Reading {
    return { G: d.G, V: d.V, D: d.D, DA: type, kind: "config", ...(value !== undefined ? { value } : {}) };
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
