/**
 * What the serial link (serial.ts) is given (SerialLinkOptions: the port, its timings and the
 * firmware's limits), what it counts (SerialCounters, for the gateway's health and metrics), and
 * the error of a command it refuses to write. Apart from the link's port loop and frame handling,
 * so that its options read on their own; importers take them from serial.ts, which re-exports them.
 */
import type { Logger } from "pino";
import type { BackoffOptions } from "../agent/backoff.js";
import type { SerialBinding, UsbMatch } from "./serial-port.js";
import type { FrameRecorder, ReadingSink } from "./types.js";

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
  /** Backoff between opens of a port that is there but fails to open. Default 500 ms to 30 s. */
  reopen?: BackoffOptions;
  /** How often an open port's device node is checked, ms. Default 500. */
  checkEveryMs?: number;
  /** How often a missing port (path or USB match) is looked for, ms. Default 250. */
  watchMs?: number;
  /**
   * Wait after every port open before the first write, ms. Default 2 000: opening the port pulses
   * DTR, which resets an Uno/Nano-class board; it is deaf for about 1.5-2 s.
   */
  settleMs?: number;
  /** Longest command line written, bytes with its `\n`. Default FIRMWARE_LINE_BYTES (127). */
  maxLineBytes?: number;
  /** Longest DA of a command, characters. Default FIRMWARE_DA_CHARS (63). */
  maxDaChars?: number;
  /** After an ERROR 1, the line must be quiet this long before the next command, ms. Default 500. */
  quietMs?: number;
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
  commandsRefused: number;
}

/** A command the link will not write because the firmware could not read it. */
export class SerialCommandRefused extends Error {
  readonly code = "SERIAL_COMMAND_REFUSED";
}
